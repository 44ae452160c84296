//! STUB (temporary)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Credential,
    Shaping,
    Inert,
}
pub fn class_of(name: &str) -> Option<Class> {
    match name {
        "ANTHROPIC_API_KEY" | "ANTHROPIC_BASE_URL" | "ANTHROPIC_AUTH_TOKEN" => {
            Some(Class::Credential)
        }
        "ANTHROPIC_MODEL" => Some(Class::Shaping),
        _ => None,
    }
}
