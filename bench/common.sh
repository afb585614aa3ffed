# Sourced by the benchmark scripts: reading the figures their programs print.
# The median of the numbers on standard input, one a line.
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The value of KEY=... on standard input (the first one).
field() { grep -oE "(^|[^[:alnum:]_])$1=[0-9.]*" | head -1 | cut -d= -f2; }
