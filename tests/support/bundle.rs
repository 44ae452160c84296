//! What environment variables a Claude Code CLI bundle reads: the extraction
//! `src/cli_env/vars.tsv` was built with (its module doc says how), run by
//! `tests/e2e/cli_env.rs` over the pinned CLI so a name the list has not
//! classified fails the tests.

/// Every environment variable name the CLI bundle `bundle` (a platform
/// binary with the JavaScript inside, or a `cli.js`) reads, by the access
/// patterns the module doc lists. Deterministic: the same bytes give the same
/// names.
pub fn names_read_by(bundle: &[u8]) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    // Helpers a module exports (by their exported names), and the modules
    // that import something: a second pass finds the imported helpers' calls.
    let mut exported: Vec<&[u8]> = Vec::new();
    let mut importers: Vec<&[u8]> = Vec::new();
    for text in segments(bundle) {
        exported.extend(
            Segment {
                text,
                out: &mut out,
            }
            .scan(),
        );
        if find(text, b"import{", 0).is_some() {
            importers.push(text);
        }
    }
    exported.sort_unstable();
    exported.dedup();
    if !exported.is_empty() {
        for text in importers {
            let mut segment = Segment {
                text,
                out: &mut out,
            };
            let helpers = segment.imported(&exported);
            segment.helper_calls(&helpers);
        }
    }
    out
}

/// The runs of text between control bytes, 16 bytes or longer: a bundled
/// module's source is one run; machine code and bytecode break into short
/// runs, so no pattern spans them.
fn segments(bundle: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let mut i = 0;
    std::iter::from_fn(move || {
        while i <= bundle.len() {
            let end = i;
            i += 1;
            if end == bundle.len() || BREAKS[usize::from(bundle[end])] {
                let run = &bundle[start..end];
                start = end + 1;
                if run.len() >= 16 {
                    return Some(run);
                }
            }
        }
        None
    })
}

/// The control bytes (all but tab, line feed and carriage return).
const BREAKS: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = !matches!(b, 0x09 | 0x0a | 0x0d);
        b += 1;
    }
    t[0x7f] = true;
    t
};

/// One run of JavaScript text, scanned for every pattern.
struct Segment<'a, 'o> {
    text: &'a [u8],
    out: &'o mut std::collections::BTreeSet<String>,
}

/// The kinds of the typed registry's readers (`X=H.bool()` and so on).
const REGISTRY_KINDS: &[&[u8]] = &[
    b".str(",
    b".rawStr(",
    b".bool(",
    b".triBool(",
    b".int(",
    b".names(",
    b".enum(",
];
/// The array methods whose callback may read `process.env[x]` for each item.
const ARRAY_METHODS: &[&[u8]] = &[
    b".some(",
    b".every(",
    b".filter(",
    b".map(",
    b".forEach(",
    b".find(",
    b".flatMap(",
];
/// Bytes after which a bare `env.X` starts an expression.
const BEFORE_EXPR: &[u8] = b" \t\n\r(,;!=&|?:{[}+-*/<>%^~";

impl<'a> Segment<'a, '_> {
    /// Adds the names this module reads; returns the exported names of the
    /// helpers it exports.
    fn scan(&mut self) -> Vec<&'a [u8]> {
        let t = self.text;
        let mut exported = Vec::new();
        if find(t, b"env", 0).is_some() {
            self.direct();
            self.bare_env();
            self.destructured();
            self.aliases();
            self.selectors();
            self.otel();
            self.plugins();
            if find(t, b"process.env", 0).is_some() {
                let helpers = self.helpers();
                self.helper_calls(&helpers);
                self.loops(&helpers);
                for (local, name) in bindings(t, b"export{") {
                    if helpers.contains(&local) {
                        exported.push(name);
                    }
                }
            }
        }
        if find(t, b":()=>", 0).is_some() {
            self.registry();
        }
        exported
    }

    /// The local names of the helpers (`exported`) this module imports.
    fn imported(&self, exported: &[&[u8]]) -> Vec<&'a [u8]> {
        bindings(self.text, b"import{")
            .filter(|(name, _)| exported.binary_search(name).is_ok())
            .map(|(_, local)| local)
            .collect()
    }

    fn add(&mut self, name: &[u8]) {
        if is_name(name) {
            self.out.insert(String::from_utf8_lossy(name).into_owned());
        }
    }

    /// `process.env.X`, `process.env?.X`, `process.env["X"]`,
    /// `process.env?.["X"]`, and `process.env[K]` with `var K="X"` in the module.
    fn direct(&mut self) {
        let t = self.text;
        for at in find_all(t, b"process.env") {
            // Code around it, not a word of a native string table, which
            // runs its strings together (`…pathprocess.env.BUN_ENVprocess.…`).
            if at == 0 || is_ident(t[at - 1]) {
                continue;
            }
            let i = at + b"process.env".len();
            let rest = &t[i..];
            if let Some(r) = strip(rest, b"?.[").or_else(|| strip(rest, b"[")) {
                if let Some((lit, tail)) = quoted(r) {
                    if tail.first() == Some(&b']') {
                        self.add(lit);
                    }
                } else if let Some((id, tail)) = ident(r) {
                    if tail.first() == Some(&b']') {
                        self.constant(id);
                    }
                }
            } else if let Some(r) = strip(rest, b"?.").or_else(|| strip(rest, b".")) {
                let (name, _) = ident(r).unwrap_or((b"", r));
                self.add(name);
            }
        }
    }

    /// `Bun.env.X` and a bare `env.X` (a local `env = process.env`), X in
    /// capitals.
    fn bare_env(&mut self) {
        let t = self.text;
        for at in find_all(t, b"env.") {
            let bun = at >= 4 && &t[at - 4..at] == b"Bun.";
            let bare = at > 0 && BEFORE_EXPR.contains(&t[at - 1]);
            if bun || bare {
                if let Some((name, _)) = ident(&t[at + 4..]) {
                    if capitals(name) {
                        self.add(name);
                    }
                }
            }
        }
    }

    /// `{X,Y:y,Z=1}=process.env` (and `Bun.env`).
    fn destructured(&mut self) {
        let t = self.text;
        for source in [&b"process.env"[..], b"Bun.env"] {
            for at in find_all(t, source) {
                let after = t.get(at + source.len()).copied().unwrap_or(b';');
                if is_ident(after) || matches!(after, b'.' | b'[' | b'?') {
                    continue;
                }
                let before = trim_end(&t[..at]);
                let Some(before) = before.strip_suffix(b"=") else {
                    continue;
                };
                let before = trim_end(before);
                let Some(inner_end) = before.len().checked_sub(1) else {
                    continue;
                };
                if before[inner_end] != b'}' {
                    continue;
                }
                let lo = inner_end.saturating_sub(1000);
                let Some(open) = before[lo..inner_end].iter().rposition(|&b| b == b'{') else {
                    continue;
                };
                let inner = &before[lo + open + 1..inner_end];
                if inner.contains(&b'}') {
                    continue;
                }
                for part in inner.split(|&b| b == b',') {
                    let part = trim_start(part);
                    if let Some((key, tail)) = ident(part) {
                        let tail = trim_start(tail);
                        if tail.is_empty() || tail[0] == b':' || tail[0] == b'=' {
                            self.add(key);
                        }
                    }
                }
            }
        }
    }

    /// The typed registry of recent releases: a module's
    /// `Wr(a,{X:()=>b,…})` whose bindings are mostly `b=H.bool()`,
    /// `H.str()`, `H.int(…)`… (property names, which minifying keeps).
    fn registry(&mut self) {
        let t = self.text;
        let mut typed: Vec<&[u8]> = Vec::new();
        for kind in REGISTRY_KINDS {
            for at in find_all(t, kind) {
                let object = ident_before(t, at);
                let eq = at - object.len();
                if object.is_empty() || eq == 0 || t[eq - 1] != b'=' {
                    continue;
                }
                let binding = ident_before(t, eq - 1);
                let start = eq - 1 - binding.len();
                if !binding.is_empty() && (start == 0 || !is_ident_or_dot(t[start - 1])) {
                    typed.push(binding);
                }
            }
        }
        if typed.is_empty() {
            return;
        }
        typed.sort_unstable();
        for at in find_all(t, b",{") {
            let target = ident_before(t, at);
            let call = at - target.len();
            if target.is_empty() || call == 0 || t[call - 1] != b'(' {
                continue;
            }
            let mut rest = &t[at + 2..];
            let mut keys = Vec::new();
            let mut hits = 0;
            while let Some((key, r)) = ident(rest) {
                let Some(r) = strip(r, b":()=>") else { break };
                let Some((value, r)) = ident(r) else { break };
                keys.push(key);
                hits += usize::from(typed.binary_search(&value).is_ok());
                match r.first() {
                    Some(b',') => rest = &r[1..],
                    Some(b'}') if r.get(1) == Some(&b')') => {
                        if hits * 2 > keys.len() {
                            keys.iter().for_each(|k| self.add(k));
                        }
                        break;
                    }
                    _ => break,
                }
            }
        }
    }

    /// The functions of this module that read the variable their first
    /// parameter names: `function f(e){…process.env[e]…}`, `f=(e)=>…`,
    /// and those that pass it on to one of them.
    fn helpers(&self) -> Vec<&'a [u8]> {
        let t = self.text;
        let mut defs: Vec<(&[u8], &[u8], &[u8])> = Vec::new();
        for at in find_all(t, b"function ") {
            let r = &t[at + b"function ".len()..];
            let Some((name, r)) = ident(r) else { continue };
            let Some(r) = strip(r, b"(") else { continue };
            let Some((param, r)) = ident(r) else { continue };
            if matches!(r.first(), Some(b',' | b')')) {
                defs.push((name, param, body(r, 300)));
            }
        }
        for at in find_all(t, b"=>") {
            let mut end = at;
            let parens = end > 0 && t[end - 1] == b')';
            if parens {
                end -= 1;
            }
            let param = ident_before(t, end);
            let mut start = end - param.len();
            if param.is_empty() {
                continue;
            }
            if parens {
                if start == 0 || t[start - 1] != b'(' {
                    continue;
                }
                start -= 1;
            }
            if start == 0 || t[start - 1] != b'=' {
                continue;
            }
            let name = ident_before(t, start - 1);
            let name_at = start - 1 - name.len();
            if name.is_empty() || (name_at > 0 && is_ident_or_dot(t[name_at - 1])) {
                continue;
            }
            defs.push((name, param, body(&t[at + 2..], 200)));
        }
        let mut helpers: Vec<&[u8]> = Vec::new();
        loop {
            let before = helpers.len();
            for &(name, param, body) in &defs {
                if !helpers.contains(&name) && reads_var(body, param, &helpers) {
                    helpers.push(name);
                }
            }
            if helpers.len() == before {
                return helpers;
            }
        }
    }

    /// `f("X")` and `f(K)` (`var K="X"`) for each helper `f`.
    fn helper_calls(&mut self, helpers: &[&[u8]]) {
        let t = self.text;
        for helper in helpers {
            let mut call = helper.to_vec();
            call.push(b'(');
            for at in find_all(t, &call) {
                if at > 0 && is_ident_or_dot(t[at - 1]) {
                    continue;
                }
                let r = &t[at + call.len()..];
                if let Some((lit, tail)) = quoted(r) {
                    if matches!(tail.first(), Some(b',' | b')')) {
                        self.add(lit);
                    }
                } else if let Some((id, tail)) = ident(r) {
                    if matches!(tail.first(), Some(b',' | b')')) {
                        self.constant(id);
                    }
                }
            }
        }
    }

    /// Literal lists whose items are read one by one:
    /// `for(let k of["X","Y"])…process.env[k]`, `["X","Y"].some((k)=>process.env[k])`,
    /// and the same over a list named in this module (`L=["X"]`, `L=new Set(["X"])`).
    fn loops(&mut self, helpers: &[&[u8]]) {
        let t = self.text;
        let mut lists: Vec<&[u8]> = Vec::new();
        for decl in [&b"for(let "[..], b"for(const ", b"for(var "] {
            for at in find_all(t, decl) {
                let mut r = &t[at + decl.len()..];
                let mut vars = Vec::new();
                if let Some(inner) = strip(r, b"[") {
                    let Some(close) = inner.iter().position(|&b| b == b']') else {
                        continue;
                    };
                    vars.extend(inner[..close].split(|&b| b == b',').map(trim_start));
                    r = &inner[close + 1..];
                } else if let Some((v, tail)) = ident(r) {
                    vars.push(v);
                    r = tail;
                }
                let Some(r) = strip(trim_start(r), b"of") else {
                    continue;
                };
                let r = trim_start(r);
                let (inline, named, tail) = match r.first() {
                    Some(b'[') => match bracketed(r) {
                        Some(n) => (&r[..n], &b""[..], &r[n..]),
                        None => continue,
                    },
                    _ => match ident(r) {
                        Some((id, tail)) => (&b""[..], id, tail),
                        None => continue,
                    },
                };
                let Some(tail) = strip(tail, b")") else {
                    continue;
                };
                let body = &tail[..tail.len().min(200)];
                if vars
                    .iter()
                    .any(|v| !v.is_empty() && reads_var(body, v, helpers))
                {
                    lists.push(if named.is_empty() {
                        inline
                    } else {
                        self.named_list(named)
                    });
                }
            }
        }
        for method in ARRAY_METHODS {
            for at in find_all(t, method) {
                let r = &t[at + method.len()..];
                let r = strip(r, b"(").unwrap_or(r);
                let Some((v, r)) = ident(r) else { continue };
                let r = strip(r, b")").unwrap_or(r);
                let Some(r) = strip(r, b"=>") else { continue };
                if !reads_var(&r[..r.len().min(120)], v, helpers) {
                    continue;
                }
                if at > 0 && t[at - 1] == b']' {
                    if let Some(open) = bracket_start(t, at - 1) {
                        lists.push(&t[open..at]);
                    }
                } else {
                    let id = ident_before(t, at);
                    let id_at = at - id.len();
                    if !id.is_empty() && (id_at == 0 || t[id_at - 1] != b'.') {
                        lists.push(self.named_list(id));
                    }
                }
            }
        }
        for list in lists {
            for lit in literals(list) {
                self.add(lit);
            }
        }
    }

    /// The text of the list `id` is declared as in this module
    /// (`var id=[…]`, `…,id=new Set([…])`; a one-letter name only after
    /// `var`), or nothing when it is declared so more than once.
    fn named_list(&self, id: &[u8]) -> &'a [u8] {
        let t = self.text;
        let mut found = None;
        for at in declarations(t, id, false) {
            let r = &t[at + id.len() + 1..];
            let r = strip(r, b"new Set(").unwrap_or(r);
            if let Some(n) = bracketed(r) {
                if found.is_some() {
                    return b"";
                }
                found = Some(&r[..n]);
            }
        }
        found.unwrap_or(b"")
    }

    /// The name `id` holds when this module declares it as a capitals
    /// literal, `var K="X"` or `…,K="X",…`, and as no other.
    fn constant(&mut self, id: &[u8]) {
        let t = self.text;
        let mut found: Option<&[u8]> = None;
        for at in declarations(t, id, true) {
            let Some((lit, tail)) = quoted(&t[at + id.len() + 1..]) else {
                continue;
            };
            if !capitals(lit) || !matches!(tail.first(), Some(b',' | b';')) {
                continue;
            }
            if found.is_some_and(|f| f != lit) {
                return;
            }
            found = Some(lit);
        }
        if let Some(lit) = found {
            self.add(lit);
        }
    }

    /// A name given to the environment, `e=process.env` (a default
    /// parameter's too: `function f(e=process.env){…e.X…}`), then `e.X` or
    /// `e["X"]` in the next 400 bytes, X in capitals.
    fn aliases(&mut self) {
        let t = self.text;
        for source in [&b"=process.env"[..], b"=Bun.env"] {
            for at in find_all(t, source) {
                let after = t.get(at + source.len()).copied().unwrap_or(b';');
                if is_ident(after) || matches!(after, b'.' | b'[' | b'?') {
                    continue;
                }
                let alias = ident_before(t, at);
                let alias_at = at - alias.len();
                if alias.is_empty() || (alias_at > 0 && is_ident_or_dot(t[alias_at - 1])) {
                    continue;
                }
                let from = at + source.len();
                let scope = &t[from..(from + 400).min(t.len())];
                let mut names = Vec::new();
                for use_at in find_all(scope, alias) {
                    if use_at > 0 && is_ident_or_dot(scope[use_at - 1]) {
                        continue;
                    }
                    let u = &t[from + use_at + alias.len()..];
                    let u = strip(u, b"?.").unwrap_or(u);
                    if let Some(u) = strip(u, b".") {
                        names.extend(ident(u).map(|(n, _)| n).filter(|n| capitals(n)));
                    } else if let Some(u) = strip(u, b"[") {
                        if let Some((lit, tail)) = quoted(u) {
                            if tail.first() == Some(&b']') && capitals(lit) {
                                names.push(lit);
                            }
                        }
                    }
                }
                names.into_iter().for_each(|n| self.add(n));
            }
        }
    }

    /// The built-in plugins' reads: `env.get("X")`, and the names their
    /// manifests declare, `env:{reads:["X",…]}`.
    fn plugins(&mut self) {
        let t = self.text;
        for at in find_all(t, b"env.get(") {
            if let Some((lit, tail)) = quoted(&t[at + b"env.get(".len()..]) {
                if tail.first() == Some(&b')') {
                    self.add(lit);
                }
            }
        }
        for at in find_all(t, b"env:{reads:") {
            let r = &t[at + b"env:{reads:".len()..];
            if let Some(n) = bracketed(r) {
                literals(&r[..n]).for_each(|lit| self.add(lit));
            }
        }
    }

    /// The AWS SDK's configuration loaders:
    /// `environmentVariableSelector:(e)=>e.X` / `e["X"]` / `e[K]`.
    fn selectors(&mut self) {
        let t = self.text;
        for at in find_all(t, b"environmentVariableSelector:") {
            let r = &t[at + b"environmentVariableSelector:".len()..];
            let r = strip(r, b"(").unwrap_or(r);
            let Some((p, r)) = ident(r) else { continue };
            let r = strip(r, b")").unwrap_or(r);
            let Some(r) = strip(r, b"=>") else { continue };
            let mut body = &r[..r.len().min(200)];
            if let Some(end) = find(body, b"configFileSelector", 0) {
                body = &body[..end];
            }
            let mut reads: Vec<(&[u8], bool)> = Vec::new();
            for use_at in find_all(body, p) {
                if use_at > 0 && is_ident_or_dot(body[use_at - 1]) {
                    continue;
                }
                let u = &body[use_at + p.len()..];
                if let Some(u) = strip(u, b".") {
                    if let Some((name, _)) = ident(u) {
                        if capitals(name) {
                            reads.push((name, false));
                        }
                    }
                } else if let Some(u) = strip(u, b"[") {
                    if let Some((lit, tail)) = quoted(u) {
                        if tail.first() == Some(&b']') {
                            reads.push((lit, false));
                        }
                    } else if let Some((id, tail)) = ident(u) {
                        if tail.first() == Some(&b']') {
                            reads.push((id, true));
                        }
                    }
                }
            }
            for (name, via_constant) in reads {
                if via_constant {
                    self.constant(name);
                } else {
                    self.add(name);
                }
            }
        }
    }

    /// OpenTelemetry's `getStringFromEnv("X")` and its siblings.
    fn otel(&mut self) {
        let t = self.text;
        for at in find_all(t, b"FromEnv") {
            let before = &t[..at];
            let known = [
                &b"getString"[..],
                b"getNumber",
                b"getBoolean",
                b"getStringList",
            ];
            if !known.iter().any(|k| before.ends_with(k)) {
                continue;
            }
            let r = &t[at + b"FromEnv".len()..];
            let r = strip(r, b")").unwrap_or(r);
            let Some(r) = strip(r, b"(") else { continue };
            if let Some((lit, _)) = quoted(r) {
                self.add(lit);
            }
        }
    }
}

/// Where `id=` starts a declaration in `t`: after `var `, or after a comma
/// (for a one-letter `id`, only when `short_after_comma`: a list's
/// one-letter name is too often a local's).
fn declarations<'t>(
    t: &'t [u8],
    id: &'t [u8],
    short_after_comma: bool,
) -> impl Iterator<Item = usize> + 't {
    let mut pattern = id.to_vec();
    pattern.push(b'=');
    let hits: Vec<usize> = find_all(t, &pattern).collect();
    hits.into_iter().filter(move |&at| {
        let after = t.get(at + id.len() + 1).copied();
        let var = at >= 4 && &t[at - 4..at] == b"var ";
        let comma = (id.len() > 1 || short_after_comma) && at >= 1 && t[at - 1] == b',';
        !id.is_empty() && (var || comma) && !matches!(after, Some(b'=' | b'>'))
    })
}

/// The pairs of `export{a,b as c}` (local, exported) or `import{a,b as c}`
/// (imported, local): `(a, a)`, `(b, c)`.
fn bindings<'t>(t: &'t [u8], keyword: &'t [u8]) -> impl Iterator<Item = (&'t [u8], &'t [u8])> {
    find_all(t, keyword).flat_map(move |at| {
        let list = &t[at + keyword.len()..];
        let end = list
            .iter()
            .take(20_000)
            .position(|&b| b == b'}')
            .unwrap_or(0);
        list[..end].split(|&b| b == b',').filter_map(|item| {
            let item = trim_end(trim_start(item));
            let (first, rest) = ident(item)?;
            let second = match strip(rest, b" as ") {
                Some(r) => ident(r)?.0,
                None => first,
            };
            Some((first, second))
        })
    })
}

/// Whether `body` reads `process.env[var]` or passes `var` to a helper.
fn reads_var(body: &[u8], var: &[u8], helpers: &[&[u8]]) -> bool {
    for prefix in [&b"process.env["[..], b"process.env?.["] {
        let mut p = prefix.to_vec();
        p.extend_from_slice(var);
        p.push(b']');
        if find(body, &p, 0).is_some() {
            return true;
        }
    }
    helpers.iter().any(|h| {
        let mut p = h.to_vec();
        p.push(b'(');
        p.extend_from_slice(var);
        let found = find_all(body, &p).any(|at| {
            (at == 0 || !is_ident_or_dot(body[at - 1]))
                && matches!(body.get(at + p.len()), Some(b',' | b')'))
        });
        found
    })
}

/// A function body's first `max` bytes, cut where the next function starts.
fn body(r: &[u8], max: usize) -> &[u8] {
    let r = &r[..r.len().min(max)];
    match find(r, b"function ", 0) {
        Some(end) => &r[..end],
        None => r,
    }
}

/// The string literals of a list's text that are whole names.
fn literals(list: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < list.len() {
            if matches!(list[i], b'"' | b'\'' | b'`') {
                if let Some((lit, tail)) = quoted(&list[i..]) {
                    i = list.len() - tail.len();
                    if is_name(lit) {
                        return Some(lit);
                    }
                    continue;
                }
            }
            i += 1;
        }
        None
    })
}

/// The length of the bracketed text `r` starts with (`[` … its `]`),
/// strings skipped; none past 20,000 bytes.
fn bracketed(r: &[u8]) -> Option<usize> {
    if r.first() != Some(&b'[') {
        return None;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < r.len().min(20_000) {
        match r[i] {
            b'"' | b'\'' | b'`' => {
                let close = r[i + 1..].iter().position(|&b| b == r[i])?;
                i += close + 1;
            }
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where the `[` is that the `]` at `close` ends (no strings with brackets
/// inside, as in lists of names); none past 20,000 bytes.
fn bracket_start(t: &[u8], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    let lo = close.saturating_sub(20_000);
    for i in (lo..=close).rev() {
        match t[i] {
            b']' => depth += 1,
            b'[' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// A quoted literal at the start of `r` (`"…"`, `'…'` or `` `…` `` with no
/// escapes) and what follows it.
fn quoted(r: &[u8]) -> Option<(&[u8], &[u8])> {
    let q = *r.first()?;
    if !matches!(q, b'"' | b'\'' | b'`') {
        return None;
    }
    let len = r[1..]
        .iter()
        .take(200)
        .position(|&b| b == q || b == b'\\')?;
    (r[1 + len] == q).then(|| (&r[1..1 + len], &r[2 + len..]))
}

/// The identifier at the start of `r`, and what follows it.
fn ident(r: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = r.iter().take_while(|&&b| is_ident(b)).count();
    (len > 0 && !r[0].is_ascii_digit()).then(|| r.split_at(len))
}

/// The identifier that ends at `end`.
fn ident_before(t: &[u8], end: usize) -> &[u8] {
    let len = t[..end].iter().rev().take_while(|&&b| is_ident(b)).count();
    &t[end - len..end]
}

fn strip<'r>(r: &'r [u8], prefix: &[u8]) -> Option<&'r [u8]> {
    r.strip_prefix(prefix)
}

fn trim_start(r: &[u8]) -> &[u8] {
    let n = r.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &r[n..]
}

fn trim_end(r: &[u8]) -> &[u8] {
    let n = r
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_whitespace())
        .count();
    &r[..r.len() - n]
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

fn is_ident_or_dot(b: u8) -> bool {
    is_ident(b) || b == b'.'
}

/// An environment variable's name as the CLI spells them: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_name(s: &[u8]) -> bool {
    matches!(s.first(), Some(b) if b.is_ascii_alphabetic() || *b == b'_')
        && s.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A name in capitals, digits and underscores.
fn capitals(s: &[u8]) -> bool {
    s.iter()
        .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The first `needle` in `hay` at or after `from`.
fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut i = from;
    while i + needle.len() <= hay.len() {
        let at = i + hay[i..hay.len() - rest.len()]
            .iter()
            .position(|&b| b == first)?;
        if &hay[at + 1..at + needle.len()] == rest {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// Every `needle` in `hay`, left to right (overlaps included).
fn find_all<'h>(hay: &'h [u8], needle: &'h [u8]) -> impl Iterator<Item = usize> + 'h {
    let mut from = 0;
    std::iter::from_fn(move || {
        let at = find(hay, needle, from)?;
        from = at + 1;
        Some(at)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &[u8]) -> Vec<String> {
        names_read_by(text).into_iter().collect()
    }
    #[test]
    fn direct_reads() {
        let js = b";a=process.env.AAA_X;b=process.env?.BBB;c=process.env[\"CCC\"];\
            d=process.env['DDD'];e=globalThis.process.env?.[`EEE`];f=process.env[g];";
        assert_eq!(names(js), ["AAA_X", "BBB", "CCC", "DDD", "EEE"]);
    }

    #[test]
    fn an_index_declared_once_as_a_literal() {
        let js = b"var K=\"KKK\",L=1;function f(){return process.env[K]}";
        assert_eq!(names(js), ["KKK"]);
        let twice = b"var Q=\"ONE\";function g(){var Q=\"TWO\";return process.env[Q]}";
        assert!(names(twice).is_empty());
    }

    #[test]
    fn the_typed_registry() {
        let js = b"var a={};Wr(a,{ANTHROPIC_API_KEY:()=>b,MAX_X:()=>c});\
            var b=H.str(),c=H.int({min:1});var m={};Wr(m,{DEFAULT_MODE:()=>q});function q(){}";
        assert_eq!(names(js), ["ANTHROPIC_API_KEY", "MAX_X"]);
    }

    #[test]
    fn bun_env_bare_env_aliases_and_destructuring() {
        let js = b";if(Bun.env.FORCE_COLOR)x=env.NO_COLOR;y=opts.env.NOT_THIS;\
            function f(e=process.env){return e.BASH_MAX_TIMEOUT_MS}\
            var{WASM_CWD=1,CHOKIDAR_USEPOLLING:u}=process.env;";
        assert_eq!(
            names(js),
            [
                "BASH_MAX_TIMEOUT_MS",
                "CHOKIDAR_USEPOLLING",
                "FORCE_COLOR",
                "NO_COLOR",
                "WASM_CWD"
            ]
        );
    }

    #[test]
    fn helpers_called_with_a_literal() {
        let js = b"function g(e){return process.env[e]?.trim()}var S=(e)=>g(e);\
            S(\"ANTHROPIC_SCOPE\");g(\"KUBECONFIG\");x.g(\"NOT_A_READ\");h(\"NOT_EITHER\");";
        assert_eq!(names(js), ["ANTHROPIC_SCOPE", "KUBECONFIG"]);
    }

    #[test]
    fn helpers_another_module_imports() {
        let js = b"var UT=(e)=>{return globalThis.process.env?.[e]};export{UT as r};\0\
            import{r as q}from\"./chunk.js\";q(\"ANTHROPIC_WORK_ID\");r(\"NOT_IMPORTED\");";
        assert_eq!(names(js), ["ANTHROPIC_WORK_ID"]);
    }

    #[test]
    fn lists_read_item_by_item() {
        let js = b"for(let k of[\"GIT_SSL_CERT\",\"GIT_SSL_KEY\"])if(process.env[k])n++;\
            [\"A_ONE\"].some((k)=>process.env[k]);var L=[\"B_TWO\",\"not-a-name\"];\
            L.map((k)=>process.env[k]);var M=[\"NOT_READ\"];M.map((k)=>k+1);";
        assert_eq!(names(js), ["A_ONE", "B_TWO", "GIT_SSL_CERT", "GIT_SSL_KEY"]);
    }

    #[test]
    fn plugins_opentelemetry_and_the_aws_sdk() {
        let js =
            b"await o.env.get(\"GITLAB_CI\");x={env:{reads:[\"CLAUDE_JOB_DIR\",\"USER_TYPE\"]}};\
            (0,Rp.getNumberFromEnv)(\"OTEL_BSP_MAX_QUEUE_SIZE\");var ur=\"AWS_MAX_ATTEMPTS\";\
            y={environmentVariableSelector:(e)=>e[ur],configFileSelector:(e)=>e[\"NOT_ENV\"]};\
            z={environmentVariableSelector:(n)=>n.AWS_REGION};";
        assert_eq!(
            names(js),
            [
                "AWS_MAX_ATTEMPTS",
                "AWS_REGION",
                "CLAUDE_JOB_DIR",
                "GITLAB_CI",
                "OTEL_BSP_MAX_QUEUE_SIZE",
                "USER_TYPE"
            ]
        );
    }

    #[test]
    fn no_name_across_machine_code_or_a_string_table() {
        let bytes = b"\x00\x08process.env.BUN_ENVprocess.browser\x00 run together: \
            pathprocess.env.NODE_ENVInternal\x01\x02env.I\x83\xc4";
        assert!(names(bytes).is_empty());
        assert!(names(b"").is_empty());
    }
}
