# claude-shim, PATH mode (zsh). Printed by `claude-shim init zsh`, which fills
# in the shim directory. The directory goes first on PATH, so this shell, the
# scripts it starts and the IDEs launched from it all find the shim as
# `claude`. Sourcing again moves it to the front instead of adding a copy.

() {
    emulate -L zsh
    local dir=$1 entry
    local -a kept
    for entry in "${path[@]}"; do
        [[ $entry == "$dir" ]] || kept+=("$entry")
    done
    path=("$dir" "${kept[@]}")
    export PATH
    # Tells `claude-shim doctor`/`status` how this shell reaches the shim.
    export CLAUDE_SHIM_MODE=path
} __CLAUDE_SHIM_DIR__
