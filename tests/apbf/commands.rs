//! APBF.* commands over the wire (docs/apbf.md §5) on every server flavor:
//! every error, the replies in RESP2 and RESP3, the count window's
//! guarantee (the last `capacity` items are never absent) and forgetting,
//! time windows that age by the clock even while idle, APBF.TICK, and the
//! chunked copy.
use common::apbf::{add_range, info, info_int, present, scandump_copy};
use common::*;
use std::time::{Duration, Instant};

fn ints(v: &[i64]) -> Reply {
    arr(v.iter().map(|&i| int(i)).collect())
}

const BAD_ERROR: &str =
    "ERR APBF: error rate must be a number in [1e-8, 1), or an integer 1..5 meaning 10^-n";

#[test]
fn reserve_checks_every_argument() {
    each(|c, _| {
        let cases = [
            ("APBF.RESERVE k COUNT 0.01", arity("apbf.reserve")),
            ("APBF.RESERVE k TIME 0.01 1 2 3", arity("apbf.reserve")),
            (
                "APBF.RESERVE k SIZE 0.01 10",
                err("ERR APBF: window must be COUNT or TIME"),
            ),
            (
                "APBF.RESERVE k COUNT 0.01 10 5",
                err("ERR APBF: COUNT takes error and capacity, no timespan"),
            ),
            (
                "APBF.RESERVE k TIME 0.01 10",
                err("ERR APBF: TIME takes error, capacity and timespan"),
            ),
            ("APBF.RESERVE k COUNT 0 10", err(BAD_ERROR)),
            ("APBF.RESERVE k COUNT 6 10", err(BAD_ERROR)),
            ("APBF.RESERVE k COUNT 1.0 10", err(BAD_ERROR)),
            ("APBF.RESERVE k COUNT 1e-9 10", err(BAD_ERROR)),
            (
                "APBF.RESERVE k COUNT 0.01 0",
                err("ERR APBF: capacity must be an integer in [1, 1073741824]"),
            ),
            (
                "APBF.RESERVE k TIME 0.01 10 0",
                err("ERR APBF: timespan must be an integer number of seconds in [1, 315360000]"),
            ),
        ];
        for (cmd, want) in cases {
            assert_eq!(line(c, cmd), want, "{cmd}");
        }
        assert_eq!(c.cmd(&["EXISTS", "k"]), int(0));
        assert_eq!(line(c, "APBF.RESERVE k count 2 1000"), ok());
        assert_eq!(c.cmd(&["TYPE", "k"]), simple("APBF-rsbl"));
        assert_eq!(
            line(c, "APBF.RESERVE k COUNT 0.1 10"),
            err("ERR APBF: key already exists")
        );
        c.cmd(&["SET", "str", "v"]);
        assert_eq!(
            line(c, "APBF.RESERVE str COUNT 0.1 10"),
            err("ERR APBF: key already exists")
        );
        let i = info(c, "k");
        assert_eq!(i["Hash functions count"], int(11));
        assert_eq!(i["Extra slices"], int(46));
        assert_eq!(i["Window items"], int(46 * 22));
    });
}

#[test]
fn add_exists_replies_and_errors() {
    each(|c, resp3| {
        assert_eq!(line(c, "APBF.ADD k a"), err("ERR APBF: key does not exist"));
        assert_eq!(line(c, "APBF.EXISTS k a b"), ints(&[0, 0]));
        assert_eq!(line(c, "APBF.ADD k"), arity("apbf.add"));
        assert_eq!(line(c, "APBF.EXISTS k"), arity("apbf.exists"));
        assert_eq!(line(c, "APBF.INFO k"), err("ERR APBF: key does not exist"));
        assert_eq!(line(c, "APBF.RESERVE k COUNT 0.001 1000"), ok());
        assert_eq!(line(c, "APBF.ADD k a b a"), ints(&[1, 1, 0]));
        assert_eq!(line(c, "APBF.ADD k b"), ints(&[0]));
        assert_eq!(line(c, "APBF.EXISTS k a b c"), ints(&[1, 1, 0]));
        c.cmd(&["SET", "str", "v"]);
        for cmd in ["APBF.ADD str a", "APBF.EXISTS str a", "APBF.INFO str"] {
            assert_eq!(line(c, cmd), err(WRONGTYPE), "{cmd}");
        }
        let r = c.cmd(&["APBF.INFO", "k"]);
        assert_eq!(matches!(r, Reply::Map(_)), resp3, "{r:?}");
        let i = info(c, "k");
        assert_eq!(i["Window type"], simple("count"));
        assert_eq!(i["Inserts count"], int(4));
        assert_eq!(i["Items in generation"], int(4));
        assert_eq!(i["Capacity"], int(1000));
        let size = i["Size"].as_int();
        assert!(c.cmd(&["MEMORY", "USAGE", "k"]).as_int() >= size);
    });
}

/// The last `capacity` items always answer 1; after ten windows the first
/// ones are forgotten (they answer 1 only at about the error rate).
#[test]
fn count_window_guarantee_and_forgetting() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(line(&mut c, "APBF.RESERVE w COUNT 0.01 1000"), ok());
        for end in (500..=12_000).step_by(500) {
            add_range(&mut c, "w", "i", end - 500, end);
            let from = end.saturating_sub(1000);
            assert_eq!(present(&mut c, "w", "i", from, end), (end - from) as usize);
        }
        let old = present(&mut c, "w", "i", 0, 1000);
        assert!(
            old < 40,
            "{flavor:?}: {old} of the first 1000 still present"
        );
        let fresh = present(&mut c, "w", "fresh", 0, 10_000);
        assert!(fresh < 200, "{flavor:?}: {fresh} false positives in 10000");
        assert_eq!(info_int(&mut c, "w", "Shifts count"), 12_000 / 22);
    }
}

/// A 2-second window: an item answers 1 for at least 2 s after its add
/// and is forgotten within 2·(l+1)/l s plus a margin, with no write in
/// between (an idle key ages); APBF.INFO shows the pending shifts.
#[test]
fn time_window_ages_while_idle() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(line(&mut c, "APBF.RESERVE t TIME 0.1 100 2"), ok());
        assert_eq!(info(&mut c, "t")["Window type"], simple("time"));
        let sent = Instant::now();
        assert_eq!(line(&mut c, "APBF.ADD t x"), ints(&[1]));
        let period = info_int(&mut c, "t", "Period ms") as u64;
        assert_eq!(period, 2000u64.div_ceil(14));
        assert!(info_int(&mut c, "t", "Last shift ms") > 0);
        while sent.elapsed() < Duration::from_millis(1900) {
            assert_eq!(line(&mut c, "APBF.EXISTS t x"), ints(&[1]), "{flavor:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        wait::until("x forgotten", Duration::from_secs(30), || {
            match line(&mut c, "APBF.EXISTS t x") {
                r if r == ints(&[0]) => Ok(()),
                r => Err(format!("{r:?}")),
            }
        });
        let forgotten = sent.elapsed();
        assert!(forgotten >= Duration::from_millis(2000), "{forgotten:?}");
        assert!(info_int(&mut c, "t", "Pending shifts") >= 14);
        assert_eq!(info_int(&mut c, "t", "Shifts count"), 0);
        // The next write applies them.
        assert_eq!(line(&mut c, "APBF.ADD t y"), ints(&[1]));
        assert!(info_int(&mut c, "t", "Shifts count") >= 14);
        assert_eq!(info_int(&mut c, "t", "Pending shifts"), 0);
    }
}

#[test]
fn tick_checks_and_ages() {
    each(|c, _| {
        assert_eq!(
            line(c, "APBF.TICK t 5"),
            err("ERR APBF: key does not exist")
        );
        assert_eq!(line(c, "APBF.TICK t"), arity("apbf.tick"));
        assert_eq!(line(c, "APBF.TICK t 0"), err("ERR APBF: invalid timestamp"));
        assert_eq!(line(c, "APBF.RESERVE n COUNT 0.1 10"), ok());
        assert_eq!(line(c, "APBF.TICK n 5"), err("ERR APBF: not a time window"));
        assert_eq!(line(c, "APBF.RESERVE t TIME 0.1 10 10"), ok());
        assert_eq!(
            line(c, "APBF.TICK t 9999999999999"),
            err("ERR APBF: timestamp is more than 60 s past the server's clock")
        );
        // The first tick starts the clock; later ones shift (period
        // ceil(10 s / 14) = 715 ms); earlier times change nothing.
        assert_eq!(line(c, "APBF.TICK t 1000000"), int(0));
        assert_eq!(line(c, "APBF.TICK t 1010000"), int(13));
        assert_eq!(line(c, "APBF.TICK t 1005000"), int(0));
        assert_eq!(info_int(c, "t", "Last shift ms"), 1_000_000 + 13 * 715);
        // An add ages the filter to the server's clock.
        assert_eq!(line(c, "APBF.ADD t x"), ints(&[1]));
        assert!(info_int(c, "t", "Last shift ms") > 1_010_000);
        assert_eq!(line(c, "APBF.EXISTS t x"), ints(&[1]));
    });
}

#[test]
fn scandump_and_loadchunk_copy_a_filter() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(line(&mut c, "APBF.RESERVE src TIME 0.001 20000 60"), ok());
        add_range(&mut c, "src", "i", 0, 3000);
        let cmds = scandump_copy(&mut c, "src", "dst");
        assert_eq!(
            cmds.len() as i64,
            1 + info_int(&mut c, "src", "Slices count")
        );
        for r in c.pipeline(&cmds) {
            assert_eq!(r, ok());
        }
        assert_eq!(c.cmd(&["DUMP", "dst"]), c.cmd(&["DUMP", "src"]));
        assert_eq!(present(&mut c, "dst", "i", 0, 3000), 3000);
        // Errors leave the copy as it was.
        let before = c.cmd(&["DUMP", "dst"]);
        for (cmd, want) in [
            (
                args!["APBF.LOADCHUNK", "dst", "0", "x"].to_vec(),
                "ERR APBF: invalid iterator",
            ),
            (
                args!["APBF.LOADCHUNK", "dst", "1", "x"].to_vec(),
                "ERR APBF: received bad data",
            ),
            (
                args!["APBF.LOADCHUNK", "dst", "999", "x"].to_vec(),
                "ERR APBF: invalid iterator",
            ),
            (
                args!["APBF.LOADCHUNK", "dst", "2", "x"].to_vec(),
                "ERR APBF: chunk length does not match",
            ),
            (
                args!["APBF.LOADCHUNK", "nokey", "2", "x"].to_vec(),
                "ERR APBF: key does not exist",
            ),
            (
                args!["APBF.SCANDUMP", "dst", "-1"].to_vec(),
                "ERR APBF: invalid iterator",
            ),
            (
                args!["APBF.SCANDUMP", "nokey", "0"].to_vec(),
                "ERR APBF: key does not exist",
            ),
        ] {
            assert_eq!(c.cmd(&cmd), err(want), "{cmd:?}");
        }
        assert_eq!(c.cmd(&["DUMP", "dst"]), before);
        assert_eq!(
            c.cmd(&["APBF.SCANDUMP", "dst", "100000"]),
            arr(vec![int(0), bulk("")])
        );
        // A header over an existing filter replaces it.
        assert_eq!(c.cmd(&cmds[0]), ok());
        assert_eq!(present(&mut c, "dst", "i", 0, 3000), 0);
        assert_eq!(info_int(&mut c, "dst", "Inserts count"), 3000);
    }
}
