#!/usr/bin/perl
# sisimai_parse.pl: the Sisimai side of bench/dsn_bench.sh. Parses every file named on the
# command line in this one process with Debian's Sisimai 4.25 (libsisimai-perl) and prints how
# many messages and recipients it read and how long that took (parsing only, after start-up).
# Reads: the given .eml files. Writes: one summary line to stdout.
use strict;
use warnings;
use Sisimai;
use Time::HiRes qw(time);

my @files = @ARGV;
die "usage: sisimai_parse.pl FILE...\n" unless @files;
my ($messages, $recipients) = (0, 0);
my $t0 = time;
for my $f (@files) {
    # Sisimai 4.x: make() parses a mailbox or a single message file and returns the decoded
    # results (Sisimai::Data objects), one per recipient.
    my $data = Sisimai->make($f, 'delivered' => 1, 'vacation' => 1) || [];
    $messages++;
    $recipients += scalar @$data;
}
my $elapsed = time - $t0;
printf "sisimai messages=%d recipients=%d seconds=%.3f msgs_per_s=%.1f\n",
    $messages, $recipients, $elapsed, $elapsed > 0 ? $messages / $elapsed : 0;
