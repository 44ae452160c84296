//! `claude-shim pins`, `forget` and `gc` against a store seeded through the
//! library: one row per conversation, forgetting by session / cwd / all, and
//! gc dropping pins whose session files are gone or that are too old.

use crate::support::store::{count, seed_pin, seed_run};
use crate::support::{ok, run, Input, Sandbox};
use claude_shim::store::runs::{Kind, Run, Spent};
use serde_json::Value;

const S1: &str = "11111111-1111-4111-8111-111111111111";
const S2: &str = "22222222-2222-4222-8222-222222222222";
const S3: &str = "33333333-3333-4333-8333-333333333333";

/// S1: two turns in /a (file present); S2: one turn in /b (file present);
/// S3: one turn in /b whose session file is gone.
fn seeded() -> Sandbox {
    let s = Sandbox::first_use();
    seed_pin(&s, S1, "/a", 1, "first reply", 0);
    seed_pin(&s, S2, "/b", 1, "other\nconversation", 0);
    seed_pin(&s, S1, "/a", 2, "second reply", 0);
    seed_pin(&s, S3, "/b", 1, "lost", 0);
    s.make_session_file(S1);
    s.make_session_file(S2);
    s
}

fn pins_json(s: &Sandbox, args: &[&str]) -> Vec<Value> {
    let out = ok(s.cli(&[&["pins", "--json"], args].concat()));
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    v.as_array().cloned().unwrap_or_default()
}

fn sessions(rows: &[Value]) -> Vec<&str> {
    rows.iter().filter_map(|r| r["session"].as_str()).collect()
}

#[test]
fn pins_lists_one_row_per_conversation_newest_pin_first() {
    let s = seeded();
    let rows = pins_json(&s, &[]);
    assert_eq!(sessions(&rows), [S3, S1, S2]);
    let s1 = &rows[1];
    assert_eq!(s1["turns"], 2);
    assert_eq!(s1["reply_preview"], "second reply");
    assert_eq!(s1["pins"], 2);
    assert_eq!(s1["cwd"], "/a");
    assert!(s1["session_file"].as_str().is_some());
    assert_eq!(rows[0]["session_file"], Value::Null);
    assert_eq!(sessions(&pins_json(&s, &["--cwd", "/b"])), [S3, S2]);

    let out = ok(s.cli(&["pins"]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "header + 3 rows: {out}");
    assert!(lines[0].contains("last reply"), "{out}");
    assert!(
        lines[2].contains(S1) && lines[2].contains("second reply"),
        "{out}"
    );
    assert!(lines[3].contains("other conversation"), "one line: {out}");
    assert!(lines[1].contains("session file gone"), "{out}");
}

#[test]
fn pins_on_an_empty_machine() {
    let s = Sandbox::first_use();
    assert_eq!(ok(s.cli(&["pins"])).trim(), "no pinned conversations");
    assert!(pins_json(&s, &[]).is_empty());
}

#[test]
fn forget_one_session() {
    let s = seeded();
    let out = ok(s.cli(&["forget", S1]));
    assert!(out.contains("forgot 2 pin(s)"), "{out}");
    assert_eq!(sessions(&pins_json(&s, &[])), [S3, S2]);
    assert_eq!(
        count(
            &s,
            &format!("SELECT COUNT(*) FROM sessions WHERE session = '{S1}'")
        ),
        0
    );
    let o = run(s.cli(&["forget", S1]), Input::Null);
    assert_eq!(o.status.code(), Some(1), "unknown session is an error");
    assert!(
        o.err().contains("no pinned session starts with"),
        "{}",
        o.err()
    );
    assert!(
        s.claude_dir()
            .join(format!("projects/-w/{S1}.jsonl"))
            .exists(),
        "session files stay"
    );
}

/// The tables print 8 characters of an id: any unique prefix names it.
#[test]
fn forget_takes_a_unique_prefix_of_the_id() {
    let s = seeded();
    let out = ok(s.cli(&["forget", &S2[..8]]));
    assert!(out.contains("forgot"), "{out}");
    assert_eq!(sessions(&pins_json(&s, &[])), [S3, S1]);
    let o = run(s.cli(&["forget", "9"]), Input::Null);
    assert_eq!(o.status.code(), Some(1), "{}", o.err());
    assert!(
        o.err().contains("no pinned session starts with"),
        "{}",
        o.err()
    );
}

#[test]
fn forget_by_cwd_and_all() {
    let s = seeded();
    let out = ok(s.cli(&["forget", "--cwd", "/b"]));
    assert!(
        out.contains("forgot 2 pin(s) of 2 conversation(s)"),
        "{out}"
    );
    assert_eq!(sessions(&pins_json(&s, &[])), [S1]);
    let v: Value = serde_json::from_str(&ok(s.cli(&["forget", "--all", "--json"]))).unwrap();
    assert_eq!(
        (&v["pins"], &v["sessions"]),
        (&Value::from(2), &Value::from(1)),
        "{v}"
    );
    assert!(pins_json(&s, &[]).is_empty());
    assert_eq!(count(&s, "SELECT COUNT(*) FROM sessions"), 0);
}

#[test]
fn forget_needs_exactly_one_target() {
    let s = seeded();
    for args in [
        &["forget"][..],
        &["forget", "--all", S1],
        &["forget", "--all", "--cwd", "/a"],
    ] {
        let o = run(s.cli(args), Input::Null);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
    assert_eq!(pins_json(&s, &[]).len(), 3, "nothing forgotten");
}

#[test]
fn gc_drops_gone_and_old_pins_and_old_runs_then_vacuums() {
    let s = seeded();
    {
        // S2 also has an old node: past the cutoff, dropped on its own.
        seed_pin(&s, S2, "/b", 2, "old node", 40);
        for days_ago in [0, 100] {
            seed_run(
                &s,
                &Run {
                    cwd: "/a",
                    kind: Kind::Fresh,
                    why_code: "first-turn",
                    why: "first turn",
                    exit: 0,
                    bytes_in: 1,
                    bytes_sent: 1,
                    spent: Spent::default(),
                    session: None,
                    conv_key: None,
                    engine: claude_shim::store::runs::Engine::Cold,
                    replay_misses_prefix: false,
                    cache_miss: None,
                    prefix: None,
                    timing: None,
                    errors: 0,
                    cold: None,
                },
                days_ago,
            );
        }
    }
    let dry = ok(s.cli(&["gc", "--dry-run"]));
    assert!(dry.contains("would drop 2 pin(s)"), "{dry}");
    assert!(dry.contains("1 runs row(s)"), "{dry}");
    let v: Value = serde_json::from_str(&ok(s.cli(&["gc", "--dry-run", "--json"]))).unwrap();
    assert_eq!(
        (&v["dry_run"], &v["dropped"]["pins"], &v["dropped"]["runs"]),
        (&Value::Bool(true), &Value::from(2), &Value::from(1)),
        "{v}"
    );
    assert_eq!(v["pins_older_than_secs"], 30 * 86_400, "{v}");
    assert!(v["size_before"].is_null(), "{v}");
    assert_eq!(
        count(&s, "SELECT COUNT(*) FROM pins"),
        5,
        "dry run changes nothing"
    );

    let out = ok(s.cli(&["gc"]));
    assert!(out.contains("dropped 2 pin(s)"), "{out}");
    assert!(out.contains("cutoff of 30d"), "default cutoff: {out}");
    assert!(out.contains("VACUUM"), "{out}");
    assert_eq!(sessions(&pins_json(&s, &[])), [S1, S2]);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM pins"), 3);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM runs"), 1);
    assert_eq!(
        count(
            &s,
            &format!("SELECT COUNT(*) FROM sessions WHERE session = '{S3}'")
        ),
        0
    );
}

#[test]
fn gc_cutoff_follows_cleanup_period_days_unless_given() {
    let s = Sandbox::first_use();
    {
        seed_pin(&s, S1, "/a", 1, "", 5);
        seed_pin(&s, S2, "/a", 1, "", 2);
    }
    s.make_session_file(S1);
    s.make_session_file(S2);
    std::fs::write(
        s.claude_dir().join("settings.json"),
        r#"{"cleanupPeriodDays": 3}"#,
    )
    .unwrap();
    let out = ok(s.cli(&["gc"]));
    assert!(out.contains("cleanupPeriodDays"), "{out}");
    assert_eq!(sessions(&pins_json(&s, &[])), [S2]);
    ok(s.cli(&["gc", "--older-than", "1d"]));
    assert!(pins_json(&s, &[]).is_empty());
}

#[test]
fn gc_keeps_pins_when_it_cannot_see_the_session_files() {
    // Another HOME (no projects/ at all): "gone" cannot be told, so only age counts.
    let s = Sandbox::first_use();
    seed_pin(&s, S1, "/a", 1, "", 0);
    let out = ok(s.cli(&["gc"]));
    assert!(out.contains("not checking for gone session files"), "{out}");
    assert_eq!(sessions(&pins_json(&s, &[])), [S1]);
}

#[test]
fn gc_dry_run_json_counts_what_gc_then_drops() {
    let s = seeded();
    // S2's old node goes on its own; S3's file is gone, so its record goes too.
    seed_pin(&s, S2, "/b", 2, "old node", 40);
    let json = |args: &[&str]| -> Value {
        let out = ok(s.cli(&[&["gc", "--json"], args].concat()));
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let dry = json(&["--dry-run"]);
    let real = json(&[]);
    assert_eq!(dry["dropped"], real["dropped"], "dry {dry}\nreal {real}");
    assert_eq!(real["dropped"]["sessions"], 1, "{real}");
    assert_eq!(dry["sessions_gone"], real["sessions_gone"]);
}

#[test]
fn gc_json_names_the_cutoff_even_with_nothing_recorded() {
    let s = Sandbox::first_use();
    let json = |args: &[&str]| -> Value {
        let out = ok(s.cli(&[&["gc", "--json"], args].concat()));
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let v = json(&[]);
    assert_eq!(v["pins_older_than_secs"], 30 * 86_400, "{v}");
    assert_eq!(
        v["pins_cutoff_set_by"], "Claude Code's default cleanupPeriodDays",
        "{v}"
    );
    let v = json(&["--dry-run", "--older-than", "2d"]);
    assert_eq!(v["pins_older_than_secs"], 2 * 86_400, "{v}");
    assert_eq!(v["pins_cutoff_set_by"], "--older-than", "{v}");
}

/// A pipe keeps full lines: whole ids and cwds; a terminal wide enough
/// shows them whole too.
#[test]
fn pins_shortens_only_what_the_width_needs() {
    let s = Sandbox::first_use();
    let deep = "/srv/work/clients/acme/a-rather-long-project-name/services/app";
    seed_pin(&s, S1, deep, 1, "a reply", 0);
    s.make_session_file(S1);
    let row = |columns: Option<&str>| {
        let mut cmd = s.cli(&["pins"]);
        if let Some(c) = columns {
            cmd.env("COLUMNS", c);
        }
        let out = ok(cmd);
        out.lines().nth(1).unwrap_or_default().to_owned()
    };
    let whole = format!("  {S1}  {deep}  a reply");
    assert!(row(None).contains(&whole), "a pipe: {}", row(None));
    assert!(row(Some("160")).contains(&whole), "{}", row(Some("160")));
    let narrow = row(Some("80"));
    assert!(narrow.contains(&format!("  {}  …", &S1[..8])), "{narrow}");
    assert!(narrow.chars().count() <= 80, "{narrow}");
}

#[test]
fn forget_takes_an_uppercase_prefix_and_says_when_a_cwd_has_no_pins() {
    let s = seeded();
    let hex = "abcdef12-1111-4111-8111-111111111111";
    seed_pin(&s, hex, "/c", 1, "", 0);
    let out = ok(s.cli(&["forget", "ABCDEF"]));
    assert!(out.contains("forgot 1 pin(s)"), "{out}");
    let out = ok(s.cli(&["forget", "--cwd", "/nonexistent"]));
    assert!(out.contains("no pins for /nonexistent"), "{out}");
    assert!(out.contains("`claude-shim pins`"), "{out}");
    assert_eq!(
        sessions(&pins_json(&s, &[])),
        [S3, S1, S2],
        "only {hex} went"
    );
}
