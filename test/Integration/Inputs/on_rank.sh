#!/bin/sh
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Runs COMMAND on every rank of an MPI job, with each argument equal to OLD
# replaced by NEW on rank RANK only (the rank from MPICH's PMI_RANK or Open
# MPI's OMPI_COMM_WORLD_RANK), to give one rank another option or file:
#
#   mpirun -np 2 sh on_rank.sh RANK OLD NEW COMMAND [ARG ...]
rank=$1
old=$2
new=$3
shift 3
me=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
if [ "$me" = "$rank" ]; then
  for arg do
    shift
    if [ "$arg" = "$old" ]; then
      set -- "$@" "$new"
    else
      set -- "$@" "$arg"
    fi
  done
fi
exec "$@"
