#!/bin/sh
# A stand-in external engine for the tests of `tandem bench --external` (the line protocol of
# bench/external_contender.h): every call "takes" $1 seconds; with a second argument it answers
# that instead of "ready".
if [ -n "$2" ]; then
  echo "$2"
  exit 0
fi
echo ready
while read -r request count; do
  [ "$request" = run ] || exit 0
  times=""
  i=0
  while [ "$i" -lt "$count" ]; do
    times="$times $1"
    i=$((i + 1))
  done
  echo $times
done
