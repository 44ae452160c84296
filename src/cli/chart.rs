//! Horizontal bars in eighths of a character cell (▏▎▍▌▋▊▉█), so small
//! differences between days still show in a narrow column.

const EIGHTHS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];

/// A bar for `value` out of `max`, at most `width` cells. Any non-zero value
/// gets at least a sliver, so "some" never looks like "none".
pub fn bar(value: f64, max: f64, width: usize) -> String {
    // NaN compares false, so it draws nothing too.
    let positive = |v: f64| v > 0.0;
    if !positive(value) || !positive(max) || width == 0 {
        return String::new();
    }
    let eighths = ((value.min(max) / max) * (width * 8) as f64).round() as usize;
    let eighths = eighths.max(1);
    let mut out = "█".repeat(eighths / 8);
    if eighths % 8 != 0 {
        out.push(EIGHTHS[eighths % 8 - 1]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_in_eighths() {
        assert_eq!(bar(10.0, 10.0, 4), "████");
        assert_eq!(bar(5.0, 10.0, 4), "██");
        assert_eq!(bar(1.0, 8.0, 1), "▏");
        assert_eq!(bar(3.0, 8.0, 1), "▍");
        assert_eq!(bar(9.0, 16.0, 2), "█▏");
        assert_eq!(bar(0.001, 1000.0, 10), "▏", "non-zero shows");
        assert_eq!(bar(0.0, 10.0, 4), "");
        assert_eq!(bar(5.0, 0.0, 4), "");
        assert_eq!(bar(f64::NAN, 10.0, 4), "");
        assert_eq!(bar(20.0, 10.0, 4), "████", "clamped");
    }
}
