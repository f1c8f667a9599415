//! Digit analysis: route patterns as CUCM writes them, matched against dialled digits.
//!
//! - a digit, `*` or `#` matches itself;
//! - `X` matches any one digit 0–9;
//! - `!` matches one or more digits 0–9;
//! - `.` separates an access code from the rest (`9.!`) and matches nothing itself.
//!
//! The most specific pattern wins ([`best_match`]): the one with the most literal characters;
//! among those, one without `!` (a fixed length matches fewer numbers) before one with; then
//! the one with more `X`; a tie left after that goes to the pattern written first.

/// The longest pattern accepted, in characters.
pub const MAX_PATTERN: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Literal(char),
    AnyDigit,
    OneOrMore,
}

/// A parsed route pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigitPattern {
    tokens: Vec<Token>,
}

/// How specific a pattern is; larger is more specific (compare as a tuple).
pub type Specificity = (usize, bool, usize);

impl DigitPattern {
    /// Parses a pattern, or says what is wrong with it.
    pub fn parse(text: &str) -> Result<DigitPattern, String> {
        if text.is_empty() {
            return Err("is empty; a route pattern needs at least one digit, X or !".into());
        }
        if text.chars().count() > MAX_PATTERN {
            return Err(format!("is longer than {MAX_PATTERN} characters"));
        }
        let mut tokens = Vec::with_capacity(text.len());
        let mut dots = 0;
        for c in text.chars() {
            match c {
                '0'..='9' | '*' | '#' => tokens.push(Token::Literal(c)),
                'X' => tokens.push(Token::AnyDigit),
                '!' => tokens.push(Token::OneOrMore),
                '.' => dots += 1,
                other => {
                    return Err(format!(
                        "{text:?} has {other:?}; a route pattern is made of digits, *, #, \
                         X (one digit), ! (one or more digits) and . (the access-code separator)"
                    ))
                }
            }
        }
        if dots > 1 {
            return Err(format!(
                "{text:?} has {dots} `.`; at most one separates the access code"
            ));
        }
        if tokens.is_empty() {
            return Err(format!(
                "{text:?} matches no digits; it needs a digit, X or !"
            ));
        }
        Ok(DigitPattern { tokens })
    }

    /// Whether `digits` (the whole dialled string) matches.
    pub fn matches(&self, digits: &str) -> bool {
        let text: Vec<char> = digits.chars().collect();
        // reach[j]: the tokens so far can consume exactly text[..j]. O(tokens × text).
        let mut reach = vec![false; text.len() + 1];
        reach[0] = true;
        for token in &self.tokens {
            let mut next = vec![false; text.len() + 1];
            for j in (0..text.len()).filter(|&j| reach[j]) {
                match token {
                    Token::Literal(c) => next[j + 1] |= text[j] == *c,
                    Token::AnyDigit => next[j + 1] |= text[j].is_ascii_digit(),
                    Token::OneOrMore => {
                        let mut k = j;
                        while k < text.len() && text[k].is_ascii_digit() {
                            k += 1;
                            next[k] = true;
                        }
                    }
                }
            }
            reach = next;
        }
        reach[text.len()]
    }

    /// (literal characters, no `!`, `X` count).
    pub fn specificity(&self) -> Specificity {
        let count = |t: Token| self.tokens.iter().filter(|&&x| x == t).count();
        let literals = self
            .tokens
            .iter()
            .filter(|t| matches!(t, Token::Literal(_)))
            .count();
        (
            literals,
            count(Token::OneOrMore) == 0,
            count(Token::AnyDigit),
        )
    }
}

/// The index of the most specific pattern matching `digits`; ties go to the first.
pub fn best_match(patterns: &[DigitPattern], digits: &str) -> Option<usize> {
    let mut best: Option<(usize, Specificity)> = None;
    for (i, pattern) in patterns.iter().enumerate() {
        if !pattern.matches(digits) {
            continue;
        }
        let rank = pattern.specificity();
        if best.is_none_or(|(_, b)| rank > b) {
            best = Some((i, rank));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> DigitPattern {
        DigitPattern::parse(text).unwrap()
    }

    #[test]
    fn wildcards_and_separator() {
        assert!(p("9.XXXX").matches("91234"));
        assert!(!p("9.XXXX").matches("9123"));
        assert!(p("9.!").matches("90"));
        assert!(p("9.!").matches("9012345678901"));
        assert!(!p("9.!").matches("9"));
        assert!(!p("9.!").matches("8123"));
        assert!(p("2XXX").matches("2000"));
        assert!(!p("2XXX").matches("2a00"));
        assert!(p("*8X").matches("*81"));
        assert!(p("X!X").matches("123"));
        assert!(!p("X!X").matches("12"));
    }

    #[test]
    fn parse_refusals() {
        assert!(DigitPattern::parse("").is_err());
        assert!(DigitPattern::parse(".").is_err());
        assert!(DigitPattern::parse("9..X").is_err());
        assert!(DigitPattern::parse("9xX").unwrap_err().contains("'x'"));
        assert!(DigitPattern::parse(&"X".repeat(65)).is_err());
    }

    #[test]
    fn most_specific_wins_and_ties_go_first() {
        let patterns = [p("9.!"), p("9.1XXX"), p("9.XXXX"), p("91!"), p("9.1XXX")];
        assert_eq!(best_match(&patterns, "91234"), Some(1));
        assert_eq!(best_match(&patterns, "92234"), Some(2));
        assert_eq!(best_match(&patterns, "912345"), Some(3));
        assert_eq!(best_match(&patterns, "9222222"), Some(0));
        assert_eq!(best_match(&patterns, "8"), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(pattern in "[0-9X!.*#a]{0,20}", digits in "\\PC{0,40}") {
            if let Ok(p) = DigitPattern::parse(&pattern) {
                let _ = p.matches(&digits);
            }
        }
    }
}
