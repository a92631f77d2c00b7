// store.cc: placeholder until the storage component lands.
