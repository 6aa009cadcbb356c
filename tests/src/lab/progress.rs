//! Live progress of the lab's hosts: a table redrawn in place on a
//! terminal, plain lines (one per change) otherwise.

use std::fmt::Write as _;
use std::io::Write;

/// One host's line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub state: String,
    pub power: String,
    pub error: String,
}

/// Draws rows as they change.
pub struct Progress {
    terminal: bool,
    drawn_lines: usize,
    last: Vec<Row>,
    last_title: String,
}

impl Progress {
    pub fn new(terminal: bool) -> Self {
        Self { terminal, drawn_lines: 0, last: Vec::new(), last_title: String::new() }
    }

    /// Shows `rows` under `title` (one line per resource, e.g. the Ironic's
    /// and the NodeSet's progress). On a terminal the previous table is
    /// overwritten; otherwise only changed title lines and rows are printed,
    /// one line each.
    pub fn update(&mut self, title: &str, rows: &[Row]) {
        if rows == self.last.as_slice() && title == self.last_title {
            return;
        }
        let mut out = std::io::stdout().lock();
        if self.terminal {
            let table = render_table(title, rows);
            // Move up over the previous table and clear to the end of the screen.
            if self.drawn_lines > 0 {
                let _ = write!(out, "\x1b[{}A\x1b[J", self.drawn_lines);
            }
            let _ = write!(out, "{table}");
            self.drawn_lines = table.lines().count();
        } else {
            for line in changed_lines(&self.last_title, title) {
                let _ = writeln!(out, "{line}");
            }
            for row in rows.iter().filter(|r| !self.last.contains(r)) {
                let _ = writeln!(out, "{}", plain_line(row));
            }
        }
        let _ = out.flush();
        self.last = rows.to_vec();
        self.last_title = title.to_string();
    }
}

/// The lines of `now` that `before` did not have.
fn changed_lines<'a>(before: &str, now: &'a str) -> Vec<&'a str> {
    let before: Vec<&str> = before.lines().collect();
    now.lines().filter(|l| !before.contains(l)).collect()
}

/// `host-0: provisioned, power on` (plus the error when there is one).
pub fn plain_line(row: &Row) -> String {
    let mut line = format!("{}: {}, power {}", row.name, or_dash(&row.state), or_dash(&row.power));
    if !row.error.is_empty() {
        let _ = write!(line, ", error: {}", row.error);
    }
    line
}

/// The table: a title, a header and one line per host, columns aligned.
pub fn render_table(title: &str, rows: &[Row]) -> String {
    let width =
        |f: fn(&Row) -> &str, header: &str| rows.iter().map(|r| f(r).len()).max().unwrap_or(0).max(header.len());
    let (wn, ws, wp) = (width(|r| &r.name, "HOST"), width(|r| &r.state, "STATE"), width(|r| &r.power, "POWER"));
    let mut out = format!("{title}\n  {:wn$}  {:ws$}  {:wp$}  ERROR\n", "HOST", "STATE", "POWER");
    for r in rows {
        let _ = writeln!(out, "  {:wn$}  {:ws$}  {:wp$}  {}", r.name, or_dash(&r.state), or_dash(&r.power), r.error);
    }
    out
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, state: &str) -> Row {
        Row { name: name.into(), state: state.into(), power: "on".into(), error: String::new() }
    }

    #[test]
    fn the_table_aligns_its_columns() {
        let table = render_table("hosts", &[row("host-0", "provisioning"), row("h1", "available")]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "hosts");
        assert_eq!(lines[1].find("STATE"), lines[2].find("provisioning"));
        assert_eq!(lines[1].find("STATE"), lines[3].find("available"));
        // The power column starts where its header does, on every row ("on" also occurs
        // inside "provisioning", so look for it from the header's column on).
        let power = lines[1].find("POWER").expect("POWER header");
        assert_eq!(&lines[2][power..power + 2], "on");
        assert_eq!(&lines[3][power..power + 2], "on");
        assert_eq!(lines[1].find("ERROR"), Some(power + "POWER".len() + 2));
    }

    #[test]
    fn plain_progress_prints_only_the_title_lines_that_changed() {
        let before = "Ironic lab/ironic: Ready=True (Ready)\nNodeSet lab/computes: Ready=False (Provisioning)";
        let now = "Ironic lab/ironic: Ready=True (Ready)\nNodeSet lab/computes: Ready=True (Ready)";
        assert_eq!(changed_lines(before, now), vec!["NodeSet lab/computes: Ready=True (Ready)"]);
        assert_eq!(changed_lines("", now).len(), 2);
    }

    #[test]
    fn plain_lines_name_the_error() {
        let mut r = row("host-0", "");
        r.error = "registration error".into();
        assert_eq!(plain_line(&r), "host-0: -, power on, error: registration error");
    }
}
