# shellcheck shell=bash
# claude-shim, PATH mode (bash). Printed by `claude-shim init bash`, which
# fills in the shim directory. The directory goes first on PATH, so this
# shell, the scripts it starts and the IDEs launched from it all find the shim
# as `claude`. Sourcing again moves it to the front instead of adding a copy.

# The directory is quoted where it needs to be (single quotes), so any `$`
# in it is meant literally.
# shellcheck disable=SC2016
__claude_shim_dir=__CLAUDE_SHIM_DIR__
__claude_shim_path=":${PATH-}:"
while [[ ${__claude_shim_path} == *":${__claude_shim_dir}:"* ]]; do
    __claude_shim_path=${__claude_shim_path//":${__claude_shim_dir}:"/:}
done
__claude_shim_path=${__claude_shim_path#:}
__claude_shim_path=${__claude_shim_path%:}
export PATH="${__claude_shim_dir}${__claude_shim_path:+:${__claude_shim_path}}"
# Tells `claude-shim doctor`/`status` how this shell reaches the shim.
export CLAUDE_SHIM_MODE=path
unset __claude_shim_dir __claude_shim_path
