//! A store that cannot be read, as the commands that read it report it: the
//! store named, what still works, and where to go next — never a bare
//! library error.

use crate::support::{run, Input, Sandbox};
use std::os::unix::fs::PermissionsExt;

fn broken() -> Sandbox {
    let s = Sandbox::new();
    let db = s.shim_home.join("shim.db");
    std::fs::write(&db, b"this is not a database, only text".repeat(200)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    s
}

#[test]
fn commands_that_need_the_store_name_it_and_the_next_step() {
    let s = broken();
    let db = s.shim_home.join("shim.db");
    for command in ["stats", "log", "pins"] {
        let mut cmd = s.manager();
        cmd.arg(command);
        let o = run(cmd, Input::Null);
        let err = o.err();
        assert_eq!(o.status.code(), Some(1), "{command}: {err}");
        assert!(o.out().is_empty(), "{command}: {}", o.out());
        assert!(
            err.starts_with(&format!(
                "claude-shim: cannot read the shim's store {}: ",
                db.display()
            )),
            "{command}: {err}"
        );
        assert!(err.contains("turns still run"), "{command}: {err}");
        assert!(err.contains("`claude-shim doctor`"), "{command}: {err}");
    }
}

#[test]
fn sessions_list_without_the_store_and_say_so() {
    let s = broken();
    let mut cmd = s.manager();
    cmd.args(["sessions", "--json"]);
    let o = run(cmd, Input::Null);
    assert_eq!(o.status.code(), Some(0), "{}", o.err());
    let rows: serde_json::Value = serde_json::from_str(&o.out()).expect("json on stdout");
    assert!(rows.is_array(), "{rows}");
    let err = o.err();
    assert!(err.contains("cannot read the shim's store"), "{err}");
    assert!(err.contains("without pins or leases"), "{err}");
}
