//! The agents' text is Markdown: drawn with its emphasis, headings, lists, inline code
//! and code blocks (pulldown-cmark's events folded into styled lines). Streaming text
//! is often cut mid-way; whatever parses so far is drawn.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::theme::Theme;

/// The lines of `text`, styled.
pub fn lines(text: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut styles: Vec<Style> = vec![theme.text_style()];
    let mut lists: Vec<Option<u64>> = Vec::new();
    let mut in_code = false;
    // A diff (```diff, or ```patch) is drawn as diffs are: additions, removals and
    // hunk headings in their colours.
    let mut in_diff = false;
    let flush = |out: &mut Vec<Line<'static>>, spans: &mut Vec<Span<'static>>| {
        if !spans.is_empty() {
            out.push(Line::from(std::mem::take(spans)));
        }
    };
    let top = |styles: &Vec<Style>| styles.last().copied().unwrap_or_default();
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                flush(&mut out, &mut spans);
                let mut s = Style::default()
                    .fg(theme.accent)
                    .add_modifier(Modifier::BOLD);
                if level == HeadingLevel::H1 {
                    s = s.add_modifier(Modifier::UNDERLINED);
                }
                styles.push(s);
            }
            Event::End(TagEnd::Heading(_)) => {
                styles.pop();
                flush(&mut out, &mut spans);
            }
            Event::Start(Tag::Emphasis) => styles.push(top(&styles).add_modifier(Modifier::ITALIC)),
            Event::Start(Tag::Strong) => styles.push(top(&styles).add_modifier(Modifier::BOLD)),
            Event::End(TagEnd::Emphasis | TagEnd::Strong) => {
                styles.pop();
            }
            Event::Start(Tag::List(start)) => {
                flush(&mut out, &mut spans);
                lists.push(start);
            }
            Event::End(TagEnd::List(_)) => {
                flush(&mut out, &mut spans);
                lists.pop();
            }
            Event::Start(Tag::Item) => {
                flush(&mut out, &mut spans);
                let depth = lists.len().saturating_sub(1);
                let bullet = match lists.last_mut() {
                    Some(Some(n)) => {
                        let b = format!("{n}. ");
                        *n += 1;
                        b
                    }
                    _ => "• ".to_string(),
                };
                spans.push(Span::styled(
                    format!("{}{bullet}", "  ".repeat(depth)),
                    Style::default().fg(theme.muted),
                ));
            }
            Event::End(TagEnd::Item) => flush(&mut out, &mut spans),
            Event::Start(Tag::CodeBlock(kind)) => {
                flush(&mut out, &mut spans);
                in_code = true;
                in_diff = matches!(&kind, CodeBlockKind::Fenced(l) if matches!(l.as_ref(), "diff" | "patch"));
                if let CodeBlockKind::Fenced(lang) = kind {
                    if !lang.is_empty() {
                        out.push(Line::from(Span::styled(
                            format!("  {lang}"),
                            theme.muted_style().add_modifier(Modifier::ITALIC),
                        )));
                    }
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                in_code = false;
                in_diff = false;
            }
            Event::Start(Tag::Paragraph) => flush(&mut out, &mut spans),
            Event::End(TagEnd::Paragraph) => flush(&mut out, &mut spans),
            Event::Text(t) if in_code => {
                for l in t.lines() {
                    let color = match l.chars().next() {
                        Some('+') if in_diff && !l.starts_with("+++") => theme.success,
                        Some('-') if in_diff && !l.starts_with("---") => theme.error,
                        Some('@') if in_diff => theme.muted,
                        _ => theme.accent,
                    };
                    out.push(Line::from(Span::styled(
                        format!("  {l}"),
                        Style::default().fg(color),
                    )));
                }
            }
            Event::Text(t) => {
                let style = top(&styles);
                let mut first = true;
                for l in t.split('\n') {
                    if !first {
                        flush(&mut out, &mut spans);
                    }
                    first = false;
                    if !l.is_empty() {
                        spans.push(Span::styled(l.to_string(), style));
                    }
                }
            }
            Event::Code(c) => spans.push(Span::styled(
                c.to_string(),
                Style::default().fg(theme.accent),
            )),
            Event::SoftBreak => spans.push(Span::styled(" ", top(&styles))),
            Event::HardBreak | Event::Rule => flush(&mut out, &mut spans),
            _ => {}
        }
    }
    flush(&mut out, &mut spans);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theme::Palette;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn markdown_becomes_styled_lines() {
        let theme = Theme::dark(Palette::TrueColor);
        let text = "# Plan\n\nI will **add** `top_words` and *then*\nrun:\n\n- the tests\n- the CLI\n\n1. one\n2. two\n\n```python\nx = 1\n```\n";
        let l = lines(text, &theme);
        assert_eq!(
            plain(&l),
            [
                "Plan",
                "I will add top_words and then run:",
                "• the tests",
                "• the CLI",
                "1. one",
                "2. two",
                "  python",
                "  x = 1",
            ]
        );
        assert!(l[0].spans[0].style.add_modifier.contains(Modifier::BOLD));
        let strong = l[1].spans.iter().find(|s| s.content == "add").unwrap();
        assert!(strong.style.add_modifier.contains(Modifier::BOLD));
        // Cut mid-stream: still drawn.
        assert_eq!(plain(&lines("Adding **top", &theme)), ["Adding **top"]);
    }

    #[test]
    fn a_diff_in_a_message_is_coloured_as_a_diff() {
        let theme = Theme::dark(Palette::TrueColor);
        let l = lines("```diff\n@@ -1 +1 @@\n-old\n+new\n same\n```\n", &theme);
        let colour = |i: usize| l[i].spans[0].style.fg;
        assert_eq!(
            plain(&l)[1..],
            ["  @@ -1 +1 @@", "  -old", "  +new", "   same"]
        );
        assert_eq!(colour(2), Some(theme.error));
        assert_eq!(colour(3), Some(theme.success));
        assert_eq!(colour(4), Some(theme.accent));
    }
}
