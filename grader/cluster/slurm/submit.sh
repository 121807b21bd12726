#!/bin/bash
# Grade a class as N shards on a Slurm cluster, then write its report:
#
#   AGENTRL_COURSE=$PWD SUBMISSIONS=/shared/returned OUT=/shared/grading-output \
#   AGENTRL_DB_URL_FILE=~/.agentrl-db-url grader/cluster/slurm/submit.sh N [sbatch options…]
#
# Prints the two job ids (the shards' array, the report); follow them with `squeue -u $USER`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shards=${1:?usage: submit.sh N [sbatch options…]}
shift
: "${AGENTRL_COURSE:?}" "${SUBMISSIONS:?}" "${OUT:?}"
array=$(sbatch --parsable --export=ALL --array="0-$((shards - 1))" "$@" "$here/grade.sbatch")
array=${array%%;*}
report=$(sbatch --parsable --export=ALL --dependency="afterok:$array" "$@" "$here/report.sbatch")
echo "$array ${report%%;*}"
