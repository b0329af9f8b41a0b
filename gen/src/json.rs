//! A minimal JSON value and writer (no dependency needed for one output object).

use std::fmt::Write;

pub enum J {
    U(u64),
    I(i64),
    F(f64),
    B(bool),
    S(String),
    Null,
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    pub fn obj(v: Vec<(&str, J)>) -> J {
        J::Obj(v.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    fn write(&self, o: &mut String) {
        match self {
            J::U(v) => write!(o, "{v}").unwrap(),
            J::I(v) => write!(o, "{v}").unwrap(),
            J::F(v) => {
                if v.is_finite() {
                    write!(o, "{v:?}").unwrap()
                } else {
                    o.push_str("null")
                }
            }
            J::B(v) => o.push_str(if *v { "true" } else { "false" }),
            J::S(s) => write_str(o, s),
            J::Null => o.push_str("null"),
            J::Arr(a) => {
                o.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        o.push(',');
                    }
                    v.write(o);
                }
                o.push(']');
            }
            J::Obj(m) => {
                o.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        o.push(',');
                    }
                    write_str(o, k);
                    o.push(':');
                    v.write(o);
                }
                o.push('}');
            }
        }
    }
}

impl std::fmt::Display for J {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::new();
        self.write(&mut s);
        f.write_str(&s)
    }
}

fn write_str(o: &mut String, s: &str) {
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => write!(o, "\\u{:04x}", c as u32).unwrap(),
            c => o.push(c),
        }
    }
    o.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_json() {
        let j = J::obj(vec![
            ("a", J::U(1)),
            ("b", J::F(0.5)),
            ("c", J::F(f64::NAN)),
            ("d", J::S("x\"y\n".into())),
            ("e", J::Arr(vec![J::B(true), J::Null, J::U(3)])),
            ("f", J::F(2.0)),
        ]);
        assert_eq!(
            j.to_string(),
            r#"{"a":1,"b":0.5,"c":null,"d":"x\"y\n","e":[true,null,3],"f":2.0}"#
        );
    }
}
