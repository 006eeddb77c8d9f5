//! BM25 ranking for the history and memory tools: a tokenizer, per-source inverted indexes
//! that can be built once and cached, and a search that scores several indexes as one corpus
//! and trims trailing hits below a score floor relative to the best hit.

use std::collections::HashMap;

/// Term-frequency saturation.
const K1: f64 = 1.2;
/// Length normalisation.
const B: f64 = 0.75;
/// Hits scoring below this fraction of the best hit are dropped: they usually match only the
/// query's common words.
pub const RELATIVE_FLOOR: f64 = 0.3;

/// Lowercased search terms of `text`: runs of letters, digits and `_` (single ASCII
/// characters dropped), and every CJK character on its own.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if word.chars().count() > 1 || !word.is_ascii() {
            out.push(std::mem::take(word));
        } else {
            word.clear();
        }
    };
    for c in text.chars() {
        if is_cjk(c) {
            flush(&mut word, &mut out);
            out.push(c.to_string());
        } else if c.is_alphanumeric() || c == '_' {
            word.extend(c.to_lowercase());
        } else {
            flush(&mut word, &mut out);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn is_cjk(c: char) -> bool {
    matches!(u32::from(c), 0x3040..=0x30FF | 0x3400..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// An inverted index over one source's documents, numbered from 0 in insertion order.
#[derive(Debug, Default, Clone)]
pub struct Index {
    postings: HashMap<String, Vec<(u32, u32)>>,
    lengths: Vec<u32>,
    total_length: u64,
}

impl Index {
    pub fn new() -> Index {
        Index::default()
    }

    /// Adds a document; returns its number.
    pub fn add(&mut self, text: &str) -> u32 {
        let doc = self.lengths.len() as u32;
        let mut counts: HashMap<String, u32> = HashMap::new();
        let mut length = 0u32;
        for term in terms(text) {
            *counts.entry(term).or_default() += 1;
            length += 1;
        }
        for (term, tf) in counts {
            self.postings.entry(term).or_default().push((doc, tf));
        }
        self.lengths.push(length);
        self.total_length += u64::from(length);
        doc
    }

    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }
}

/// A scored document: which index (position in the slice given to [`search`]) and which doc.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub source: usize,
    pub doc: u32,
    pub score: f64,
}

/// Ranks the documents of all `indexes` together against `query`, best first, dropping
/// trailing hits under [`RELATIVE_FLOOR`] of the best and keeping at most `limit`.
pub fn search(indexes: &[&Index], query: &str, limit: usize) -> Vec<Hit> {
    let mut query_terms = terms(query);
    query_terms.sort_unstable();
    query_terms.dedup();
    let docs: u64 = indexes.iter().map(|i| i.len() as u64).sum();
    if docs == 0 || query_terms.is_empty() {
        return Vec::new();
    }
    let total_length: u64 = indexes.iter().map(|i| i.total_length).sum();
    let average = (total_length as f64 / docs as f64).max(1.0);
    let mut scores: HashMap<(usize, u32), f64> = HashMap::new();
    for term in &query_terms {
        let df: usize = indexes
            .iter()
            .map(|i| i.postings.get(term).map_or(0, Vec::len))
            .sum();
        if df == 0 {
            continue;
        }
        let idf = ((docs as f64 - df as f64 + 0.5) / (df as f64 + 0.5) + 1.0).ln();
        for (source, index) in indexes.iter().enumerate() {
            for &(doc, tf) in index.postings.get(term).into_iter().flatten() {
                let length = f64::from(index.lengths[doc as usize]);
                let tf = f64::from(tf);
                let score = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average));
                *scores.entry((source, doc)).or_default() += score;
            }
        }
    }
    let mut hits: Vec<Hit> = scores
        .into_iter()
        .map(|((source, doc), score)| Hit { source, doc, score })
        .collect();
    // Ties break on position so results are stable from run to run.
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.source.cmp(&b.source))
            .then(a.doc.cmp(&b.doc))
    });
    let floor = hits.first().map_or(0.0, |h| h.score * RELATIVE_FLOOR);
    hits.retain(|h| h.score >= floor);
    hits.truncate(limit);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_lowercased_words_and_cjk_characters() {
        assert_eq!(
            terms("Fix the read_file BUG in src/main.rs: a 42x"),
            vec![
                "fix",
                "the",
                "read_file",
                "bug",
                "in",
                "src",
                "main",
                "rs",
                "42x"
            ]
        );
        assert_eq!(terms("缓存命中"), vec!["缓", "存", "命", "中"]);
    }

    #[test]
    fn ranks_a_fixed_corpus_in_the_expected_order() {
        let mut index = Index::new();
        let docs = [
            "the build uses cargo and make",                      // 0
            "postgres connection string is in the env file",      // 1
            "the deploy script pushes the docker image",          // 2
            "cargo build failed: linker error in the musl build", // 3
            "the the the the the the",                            // 4
            "make release builds the static musl binary",         // 5
        ];
        for doc in docs {
            index.add(doc);
        }
        let order = |query: &str| -> Vec<u32> {
            search(&[&index], query, 10)
                .into_iter()
                .map(|h| h.doc)
                .collect()
        };
        // Both terms first; then single matches of equal rarity, the shorter document first.
        assert_eq!(order("musl build"), vec![3, 0, 5]);
        assert_eq!(order("postgres"), vec![1]);
        // Common words alone rank low and are trimmed behind a real match.
        assert_eq!(order("the docker"), vec![2]);
        assert!(order("kubernetes").is_empty());
        assert!(order("").is_empty());
    }

    #[test]
    fn several_indexes_score_as_one_corpus() {
        let mut a = Index::new();
        a.add("alpha beta");
        a.add("gamma");
        let mut b = Index::new();
        b.add("beta beta delta");
        let hits = search(&[&a, &b], "beta", 10);
        assert_eq!(hits.len(), 2);
        assert_eq!((hits[0].source, hits[0].doc), (1, 0));
        assert_eq!((hits[1].source, hits[1].doc), (0, 0));
        assert_eq!(search(&[&a, &b], "beta", 1).len(), 1);
    }
}
