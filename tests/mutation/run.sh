#!/bin/sh
# Mutation testing of labtui's core (cosmic-ray); see tests/mutation/run.py and docs/testing.md.
#   tests/mutation/run.sh                 every target (about 1 200 mutants: 1-2 h on 2 idle cores)
#   tests/mutation/run.sh --sample 30     30 of each target's mutants, drawn at random
#   tests/mutation/run.sh stats cleanup   some targets;  --list names them
set -eu
cd "$(dirname "$0")/../.."
python -c "import cosmic_ray" 2>/dev/null || python -m pip install -q "cosmic-ray>=8.7"
exec python tests/mutation/run.py "$@"
