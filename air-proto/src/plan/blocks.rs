//! The Markdown side of the plan format: pulldown-cmark's event stream reduced to the
//! top-level blocks the plan compiler reads (headings, paragraphs, lists, code blocks,
//! the front matter), each with its byte range so that errors can name a line and a
//! task's description keeps its Markdown.

use std::ops::Range;

use pulldown_cmark::{Event, MetadataBlockKind, Options, Parser, Tag, TagEnd};

/// A run of inline content: plain text, or a code span kept whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Inline {
    Text(String),
    Code(String),
}

/// Inline content as one string (code spans without their backticks).
pub(crate) fn plain(inlines: &[Inline]) -> String {
    let mut out = String::new();
    for inline in inlines {
        match inline {
            Inline::Text(s) | Inline::Code(s) => out.push_str(s),
        }
    }
    out
}

#[derive(Clone, Debug)]
pub(crate) struct Item {
    pub inlines: Vec<Inline>,
    pub range: Range<usize>,
}

#[derive(Clone, Debug)]
pub(crate) enum BlockKind {
    FrontMatter(String),
    Heading(u8, Vec<Inline>),
    Paragraph(Vec<Inline>),
    List(Vec<Item>),
    Code(String),
    Other,
}

#[derive(Clone, Debug)]
pub(crate) struct Block {
    pub kind: BlockKind,
    pub range: Range<usize>,
}

/// Maps byte offsets to 1-based line numbers.
pub(crate) struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self { starts }
    }

    pub fn line(&self, offset: usize) -> u32 {
        let index = match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        u32::try_from(index + 1).unwrap_or(u32::MAX)
    }
}

/// What is being collected inside the current top-level block.
enum Open {
    Inlines(Vec<Inline>),
    List(Vec<Item>),
    Code(String),
    FrontMatter(String),
    Other,
}

/// Splits a Markdown document into its top-level blocks.
pub(crate) fn blocks(text: &str) -> Vec<Block> {
    let options = Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut open: Option<(Open, Range<usize>, Option<u8>)> = None;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    let (state, level) = match &tag {
                        Tag::Heading { level, .. } => {
                            (Open::Inlines(Vec::new()), Some(*level as u8))
                        }
                        Tag::Paragraph => (Open::Inlines(Vec::new()), None),
                        Tag::List(_) => (Open::List(Vec::new()), None),
                        Tag::CodeBlock(_) => (Open::Code(String::new()), None),
                        Tag::MetadataBlock(MetadataBlockKind::YamlStyle) => {
                            (Open::FrontMatter(String::new()), None)
                        }
                        _ => (Open::Other, None),
                    };
                    open = Some((state, range.clone(), level));
                } else if depth == 1 {
                    if let (Tag::Item, Some((Open::List(items), _, _))) = (&tag, open.as_mut()) {
                        items.push(Item {
                            inlines: Vec::new(),
                            range: range.clone(),
                        });
                    }
                } else if let (Tag::Item | Tag::Paragraph, Some((Open::List(items), _, _))) =
                    (&tag, open.as_mut())
                {
                    // Nested content of an item reads as a continuation of its text.
                    if let Some(item) = items.last_mut() {
                        if !item.inlines.is_empty() {
                            item.inlines.push(Inline::Text(" ".into()));
                        }
                    }
                }
                depth += 1;
            }
            Event::End(tag_end) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if let Some((state, range, level)) = open.take() {
                        let kind = match (state, tag_end) {
                            (Open::Inlines(inlines), TagEnd::Heading(_)) => {
                                BlockKind::Heading(level.unwrap_or(1), trim_inlines(inlines))
                            }
                            (Open::Inlines(inlines), _) => {
                                BlockKind::Paragraph(trim_inlines(inlines))
                            }
                            (Open::List(items), _) => BlockKind::List(
                                items
                                    .into_iter()
                                    .map(|item| Item {
                                        inlines: trim_inlines(item.inlines),
                                        range: item.range,
                                    })
                                    .collect(),
                            ),
                            (Open::Code(code), _) => BlockKind::Code(code),
                            (Open::FrontMatter(yaml), _) => BlockKind::FrontMatter(yaml),
                            (Open::Other, _) => BlockKind::Other,
                        };
                        out.push(Block { kind, range });
                    }
                }
            }
            Event::Text(s) => push_inline(&mut open, Inline::Text(s.into_string())),
            Event::Code(s) => push_inline(&mut open, Inline::Code(s.into_string())),
            Event::SoftBreak | Event::HardBreak => push_inline(&mut open, Inline::Text(" ".into())),
            Event::Html(_) | Event::InlineHtml(_) if depth == 0 => out.push(Block {
                kind: BlockKind::Other,
                range,
            }),
            Event::Rule if depth == 0 => out.push(Block {
                kind: BlockKind::Other,
                range,
            }),
            _ => {}
        }
    }
    out
}

fn push_inline(open: &mut Option<(Open, Range<usize>, Option<u8>)>, inline: Inline) {
    let Some((state, _, _)) = open.as_mut() else {
        return;
    };
    match state {
        Open::Inlines(inlines) => merge(inlines, inline),
        Open::List(items) => {
            if let Some(item) = items.last_mut() {
                merge(&mut item.inlines, inline);
            }
        }
        Open::Code(code) | Open::FrontMatter(code) => {
            let (Inline::Text(s) | Inline::Code(s)) = inline;
            code.push_str(&s);
        }
        Open::Other => {}
    }
}

/// Appends, joining adjacent text runs (pulldown-cmark splits text at entities and
/// brackets).
fn merge(inlines: &mut Vec<Inline>, inline: Inline) {
    if let (Some(Inline::Text(last)), Inline::Text(next)) = (inlines.last_mut(), &inline) {
        last.push_str(next);
        return;
    }
    inlines.push(inline);
}

fn trim_inlines(mut inlines: Vec<Inline>) -> Vec<Inline> {
    if let Some(Inline::Text(first)) = inlines.first_mut() {
        *first = first.trim_start().to_string();
    }
    if let Some(Inline::Text(last)) = inlines.last_mut() {
        *last = last.trim_end().to_string();
    }
    inlines.retain(|i| !matches!(i, Inline::Text(s) if s.is_empty()));
    inlines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_top_level_blocks_with_lines() {
        let text = "---\ntitle: x\n---\n# Plan\n\ntext `a` b\n\n- k: v\n- two\n  - nested\n\n```sh\nmake\n```\n";
        let blocks = blocks(text);
        let lines = Lines::new(text);
        let kinds: Vec<_> = blocks
            .iter()
            .map(|b| (lines.line(b.range.start), format!("{:?}", b.kind)))
            .collect();
        assert_eq!(kinds.len(), 5, "{kinds:?}");
        assert!(matches!(&blocks[0].kind, BlockKind::FrontMatter(y) if y == "title: x\n"));
        assert!(matches!(&blocks[1].kind, BlockKind::Heading(1, i) if plain(i) == "Plan"));
        assert_eq!(kinds[1].0, 4);
        match &blocks[2].kind {
            BlockKind::Paragraph(i) => assert_eq!(
                i,
                &vec![
                    Inline::Text("text ".into()),
                    Inline::Code("a".into()),
                    Inline::Text(" b".into())
                ]
            ),
            other => panic!("{other:?}"),
        }
        match &blocks[3].kind {
            BlockKind::List(items) => {
                assert_eq!(items.len(), 2);
                assert_eq!(plain(&items[1].inlines), "two nested");
                assert_eq!(lines.line(items[1].range.start), 9);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(&blocks[4].kind, BlockKind::Code(c) if c == "make\n"));
    }
}
