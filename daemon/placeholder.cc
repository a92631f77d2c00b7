// daemon placeholder until the daemon component lands.
