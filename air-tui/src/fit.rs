//! Text fitted to the columns it has.

use ratatui::text::Span;

/// `text` in at most `room` columns, cut with an ellipsis when longer.
pub(crate) fn cut(text: &str, room: usize) -> String {
    if Span::raw(text).width() <= room {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = Span::raw(c.to_string()).width();
        if used + w + 1 > room {
            break;
        }
        out.push(c);
        used += w;
    }
    if room > 0 {
        out.push('…');
    }
    out
}

/// A count in few characters: `950`, `12.4k`, `1.2M`.
pub(crate) fn short(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 1_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else {
        n.to_string()
    }
}
