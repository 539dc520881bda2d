#!/bin/sh
# The exerciser with a seed the host drew for this run (tests/groups/uring/
# cases.py): the same test as exercise.sh, on a new shape each time.
. /tests/exercise.sh
