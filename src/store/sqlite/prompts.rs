//! `Prompts` ([`crate::store::prompts`]) in the SQLite file.

use super::local::Local;
use crate::identity::{Node, Scope};
use crate::store::prompts::*;
use crate::store::types::prompts::prompted_row;
use crate::store::types::prompts::{Kept, Prompted, PER_SCOPE};
use anyhow::Result;
use rusqlite::{params, OptionalExtension};

impl Prompts for Local {
    fn keep_prompt(&mut self, pin: i64, scope: &Scope, kept: &Kept<'_>) -> Result<()> {
        if kept.prompt.len() > MAX_PROMPT {
            return Ok(());
        }
        let replies = serde_json::to_string(kept.replies)?;
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE pins SET prompt = ?2, replies = ?3, continues = ?4 WHERE id = ?1",
            params![pin, kept.prompt, replies, kept.continues],
        )?;
        tx.execute(
            "UPDATE pins SET prompt = NULL, replies = NULL
             WHERE id = (SELECT continues FROM pins WHERE id = ?1)",
            params![kept.continues],
        )?;
        tx.execute(
            "UPDATE pins SET prompt = NULL, replies = NULL
             WHERE scope = ?1 AND prompt IS NOT NULL AND id <= (
                SELECT id FROM pins WHERE scope = ?1 AND prompt IS NOT NULL
                ORDER BY id DESC LIMIT 1 OFFSET ?2)",
            params![scope.as_str(), PER_SCOPE],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn prompted(&self, scope: &Scope) -> Result<Vec<Prompted>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, chain, session, turns, conv_key, length(CAST(prompt AS BLOB)), replies
             FROM pins
             WHERE scope = ?1 AND prompt IS NOT NULL ORDER BY id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![scope.as_str(), CANDIDATES], |r| {
            Ok(prompted_row(
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })?;
        Ok(rows
            .collect::<rusqlite::Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect())
    }

    fn kept_prompt_head(&self, pin: Option<i64>, node: &Node) -> Result<Option<String>> {
        let head = match pin {
            Some(pin) => self
                .conn
                .prepare_cached("SELECT substr(prompt, 1, ?2) FROM pins WHERE id = ?1")?
                .query_row(params![pin, HEAD], |r| r.get::<_, Option<String>>(0)),
            None => self
                .conn
                .prepare_cached(
                    "SELECT substr(prompt, 1, ?2) FROM pins
                     WHERE node = ?1 AND prompt IS NOT NULL ORDER BY id DESC LIMIT 1",
                )?
                .query_row(params![node.as_str(), HEAD], |r| {
                    r.get::<_, Option<String>>(0)
                }),
        };
        Ok(head.optional()?.flatten())
    }

    fn prompt_of(&self, pin: i64) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT prompt FROM pins WHERE id = ?1")?
            .query_row(params![pin], |r| r.get::<_, Option<String>>(0))
            .optional()?
            .flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::pins::{NewPin, Ownership};
    use crate::store::Store;

    fn pin(s: &mut Store, turns: &[&str]) -> (i64, Scope) {
        let p = NewPin::of_turns("S", "A", "/w", turns, "r");
        let scope = p.scope.clone();
        (s.add_pin(&p, Ownership::Kept, "/c").unwrap(), scope)
    }

    #[test]
    fn keeps_two_per_conversation_newest_first() {
        let mut s = Store::in_memory().unwrap();
        let (a, scope) = pin(&mut s, &["a"]);
        let r = vec!["ra".to_owned()];
        s.keep_prompt(
            a,
            &scope,
            &Kept {
                prompt: "a",
                replies: &r,
                continues: None,
            },
        )
        .unwrap();
        let (b, _) = pin(&mut s, &["a", "b"]);
        s.keep_prompt(
            b,
            &scope,
            &Kept {
                prompt: "a ra b",
                replies: &r,
                continues: Some(a),
            },
        )
        .unwrap();
        let (c, _) = pin(&mut s, &["a", "b", "c"]);
        s.keep_prompt(
            c,
            &scope,
            &Kept {
                prompt: "a ra b rb c",
                replies: &r,
                continues: Some(b),
            },
        )
        .unwrap();
        let got: Vec<(i64, usize)> = s
            .prompted(&scope)
            .unwrap()
            .iter()
            .map(|p| (p.pin, p.prompt_len))
            .collect();
        assert_eq!(
            got,
            vec![(c, 11), (b, 6)],
            "the one two runs back is let go"
        );
        assert_eq!(s.prompt_of(b).unwrap().as_deref(), Some("a ra b"));
        assert_eq!(s.prompt_of(a).unwrap(), None);
        // Another scope sees none of them.
        let other = NewPin::of_turns("S", "A", "/elsewhere", &["a"], "r").scope;
        assert!(s.prompted(&other).unwrap().is_empty());
    }

    #[test]
    fn a_kept_prompts_start_by_pin_or_by_where_the_next_turn_extends() {
        let mut s = Store::in_memory().unwrap();
        let (a, scope) = pin(&mut s, &["a"]);
        let long = "é".repeat(30);
        s.keep_prompt(
            a,
            &scope,
            &Kept {
                prompt: &long,
                replies: &["r".to_owned()],
                continues: None,
            },
        )
        .unwrap();
        let head = "é".repeat(HEAD as usize);
        let node = |turns: &[&str]| NewPin::of_turns("S", "A", "/w", turns, "r").node;
        let at = node(&["a"]);
        assert_eq!(
            s.kept_prompt_head(Some(a), &at).unwrap(),
            Some(head.clone())
        );
        assert_eq!(s.kept_prompt_head(None, &at).unwrap(), Some(head));
        // A pin that kept none, a node no pin is at: none.
        let (b, _) = pin(&mut s, &["a", "b"]);
        let there = node(&["a", "b"]);
        assert_eq!(s.kept_prompt_head(Some(b), &there).unwrap(), None);
        assert_eq!(s.kept_prompt_head(None, &there).unwrap(), None);
        assert_eq!(s.kept_prompt_head(None, &node(&["c"])).unwrap(), None);
    }

    #[test]
    fn a_scope_keeps_its_newest() {
        let mut s = Store::in_memory().unwrap();
        let r = vec!["r".to_owned()];
        let mut ids = Vec::new();
        for i in 0..(PER_SCOPE + 3) {
            let t = i.to_string();
            let (id, scope) = pin(&mut s, &[&t]);
            s.keep_prompt(
                id,
                &scope,
                &Kept {
                    prompt: &t,
                    replies: &r,
                    continues: None,
                },
            )
            .unwrap();
            ids.push((id, scope));
        }
        let (_, scope) = &ids[0];
        let kept: i64 = s
            .sqlite()
            .unwrap()
            .query_row(
                "SELECT count(*) FROM pins WHERE scope = ?1 AND prompt IS NOT NULL",
                params![scope.as_str()],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(kept, PER_SCOPE);
        assert_eq!(s.prompt_of(ids[0].0).unwrap(), None);
        assert_eq!(s.prompted(scope).unwrap().len() as i64, CANDIDATES);
    }
}
