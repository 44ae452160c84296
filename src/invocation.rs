//! Classification of a claude invocation (owned by the argv helper).
