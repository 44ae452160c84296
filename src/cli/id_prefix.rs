//! Session ids as people type them: the whole id, or any prefix that names
//! one id only (the tables print 8 characters), as git takes commit ids.

use anyhow::{bail, Result};

/// The one id among `known` that `given` names: itself, or the only id it
/// starts. `what` names one of them for the messages (`pinned session`).
pub fn resolve(given: &str, known: &[String], what: &str) -> Result<String> {
    if known.iter().any(|k| k == given) {
        return Ok(given.to_owned());
    }
    // Ids are lowercase hex; `6E8E` typed or pasted from elsewhere names them too.
    let lower = given.to_ascii_lowercase();
    let matches: Vec<&String> = match given.is_empty() {
        true => Vec::new(),
        false => known
            .iter()
            .filter(|k| k.to_ascii_lowercase().starts_with(&lower))
            .collect(),
    };
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => bail!("no {what} starts with {given:?}"),
        many => {
            let shown: Vec<&str> = many.iter().take(5).map(|s| s.as_str()).collect();
            let more = match many.len() > shown.len() {
                true => format!(", and {} more", many.len() - shown.len()),
                false => String::new(),
            };
            bail!(
                "{given:?} could be any of {} {what}s: {}{more}; give more of the id",
                many.len(),
                shown.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_prefix_names_its_id_an_ambiguous_one_lists_them() {
        let known = ["ea76abf8-1111", "ea76abf8-2222", "0b12cd34-3333"].map(String::from);
        assert_eq!(resolve("0b12", &known, "session").unwrap(), known[2]);
        assert_eq!(resolve(&known[0], &known, "session").unwrap(), known[0]);
        let e = resolve("ea76abf8", &known, "session")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ea76abf8-1111") && e.contains("ea76abf8-2222"),
            "{e}"
        );
        let e = resolve("ff", &known, "session").unwrap_err().to_string();
        assert!(e.contains("no session starts with"), "{e}");
        assert!(resolve("", &known, "session").is_err());
        assert_eq!(resolve("0B12CD34", &known, "session").unwrap(), known[2]);
    }
}
