#!/bin/sh
# other_stack.sh b|c CMD...: CMD against one of the suite's other stacks
# (tests/CMakeLists.txt), beside the first (chain a, .run): its own folder
# in the build, stack-b or stack-c (LOCKLAB_RUN), and its ports 1100 (b,
# chain b) or 2200 (c, stack_lifecycle) above the first's
# (LOCKLAB_STACK_OFFSET). No two ports of the three stacks meet: the
# instances step by 100 from 8000 (up to 10), the backends by 1 from
# 12181, 12279, 12679, 12888, 13306, 13888, 16379 (bench/lib/stack_*.sh),
# which 200 or 1000 would hit; their network namespaces and tables are
# named by the offset's hundreds, which differ.
: "${LOCKLAB_BUILD_DIR:?other_stack.sh: LOCKLAB_BUILD_DIR is the build folder}"
case $1 in
    b) step=1 ;;
    c) step=2 ;;
    *) echo "other_stack.sh: the stack is b or c, not '$1'" >&2; exit 2 ;;
esac
LOCKLAB_STACK_OFFSET=$((${LOCKLAB_STACK_OFFSET:-0} + 1100 * step))
LOCKLAB_RUN=$LOCKLAB_BUILD_DIR/stack-$1
export LOCKLAB_STACK_OFFSET LOCKLAB_RUN
shift
exec "$@"
