#!/bin/sh
# second_stack.sh CMD...: CMD against the suite's second stack (chain b,
# tests/CMakeLists.txt), beside the first: its own folder, stack-b in the
# build (LOCKLAB_RUN), and its ports 1100 above the first's
# (LOCKLAB_STACK_OFFSET). No two ports of the two stacks meet: the
# instances step by 100 from 8000 (up to 10), the backends by 1 from
# 12181, 12279, 12679, 12888, 13306, 13888, 16379 (bench/lib/stack_*.sh),
# which 200 or 1000 would hit; their network namespaces and tables are
# named by the offset's hundreds, which differ.
: "${LOCKLAB_BUILD_DIR:?second_stack.sh: LOCKLAB_BUILD_DIR is the build folder}"
LOCKLAB_STACK_OFFSET=$((${LOCKLAB_STACK_OFFSET:-0} + 1100))
LOCKLAB_RUN=$LOCKLAB_BUILD_DIR/stack-b
export LOCKLAB_STACK_OFFSET LOCKLAB_RUN
exec "$@"
