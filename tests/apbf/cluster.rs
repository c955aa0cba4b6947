//! APBF keys in a real 3+3 cluster (docs/apbf.md §4.4): redis-rs's cluster
//! client routes every command by its key; replicas of each master hold
//! byte-identical filters; on servers with atomic slot migration the
//! filters move (their AOF form: APBF.LOADCHUNK chunks) under writes and
//! arrive byte-identical, on the target and on its replica.
use common::client::{self, query};
use common::cluster::{keyslot, Cluster};
use common::diff::sargs;
use common::stream::{assert_same, snapshot};
use common::*;
use redis::ConnectionLike;

/// Slots `0..MIGRATED` move; they belong to the master owning slot 0.
const MIGRATED: u16 = 2048;

/// `n` keys whose slots (as node `via` computes them) lie in `range`.
fn keys_in(via: u16, range: std::ops::Range<u16>, prefix: &str, n: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("{prefix}{i}"))
        .filter(|k| range.contains(&keyslot(via, k)))
        .take(n)
        .collect()
}

fn fill(c: &mut dyn ConnectionLike, key: &str, from: usize, n: usize) {
    let mut add = sargs(&["APBF.ADD", key]);
    add.extend((from..from + n).map(|i| format!("i{i}").into_bytes()));
    let r: Vec<i64> = query(c, &add);
    assert_eq!(r.len(), n);
}

/// Waits until every replica answers WAIT for its master's writes.
fn replicas_caught_up(cluster: &Cluster, masters: &[u16]) {
    for &m in masters {
        let mut c = Conn::connect(m).expect("connect");
        assert!(c.cmd(&["WAIT", "1", "60000"]).as_int() >= 1);
        let r = cluster.replica_of(m);
        let mut rc = Conn::connect(r).expect("connect");
        assert_eq!(rc.cmd(&["READONLY"]), ok());
        wait::until("replica offset", wait::STATE, || {
            let a = info::field(&mut c, "replication", "master_repl_offset");
            let b = info::field(&mut rc, "replication", "master_repl_offset");
            if a == b {
                Ok(())
            } else {
                Err(format!("{a} vs {b}"))
            }
        });
        assert_same(
            &snapshot(&mut c, true),
            &snapshot(&mut rc, true),
            &format!("{m} vs replica"),
        );
    }
}

fn cluster_test(flavor: Flavor) {
    let cluster = Cluster::start(flavor, Module::Rsbloom);
    let ports = cluster.live_ports();
    let masters = cluster.masters(ports[0]);
    let master_ports: Vec<u16> = masters.keys().copied().collect();
    let client = cluster.client();
    let mut c = client.get_connection().expect("cluster connection");
    // Keys over the whole slot space, count and (hour-long) time windows.
    let keys = keys_in(ports[0], 0..16384, "ap", 24);
    for (i, k) in keys.iter().enumerate() {
        let time = i % 2 == 1;
        let reserve = if time {
            sargs(&["APBF.RESERVE", k, "TIME", "0.01", "500", "3600"])
        } else {
            sargs(&["APBF.RESERVE", k, "COUNT", "0.01", "500"])
        };
        let r: String = query(&mut c, &reserve);
        assert_eq!(r, "OK");
        fill(&mut c, k, 0, 800);
        let recent: Vec<i64> = query(&mut c, &[b"APBF.EXISTS", k.as_bytes(), b"i799", b"i300"]);
        assert_eq!(recent, [1, 1], "{k}");
    }
    let mut owners: Vec<u16> = keys
        .iter()
        .map(|k| common::cluster::owner(ports[0], keyslot(ports[0], k)).expect("owner"))
        .collect();
    owners.sort();
    owners.dedup();
    assert_eq!(owners.len(), 3, "keys on every master");
    replicas_caught_up(&cluster, &master_ports);

    let (&source, ranges) = masters
        .iter()
        .find(|(_, r)| r.iter().any(|&(s, _)| s == 0))
        .expect("owner of slot 0");
    assert!(ranges.iter().any(|&(s, e)| s == 0 && e >= MIGRATED));
    let target = *masters.keys().find(|&&p| p != source).expect("target");
    let Some(kind) = flavor.slot_migration() else {
        eprintln!("{flavor:?}: no atomic slot migration; routing only");
        return;
    };
    let moving = keys_in(source, 0..MIGRATED, "mv", 6);
    for (i, k) in moving.iter().enumerate() {
        let reserve = match i % 2 {
            0 => sargs(&["APBF.RESERVE", k, "COUNT", "0.001", "200000"]),
            _ => sargs(&["APBF.RESERVE", k, "TIME", "0.01", "5000", "3600"]),
        };
        let r: String = query(&mut c, &reserve);
        assert_eq!(r, "OK");
        fill(&mut c, k, 0, 3000);
    }
    let mut src = Conn::connect(source).expect("connect");
    let before: Vec<Reply> = moving.iter().map(|k| src.cmd(&["DUMP", k])).collect();
    common::cluster::start_slot_migration(kind, source, target, 0, MIGRATED - 1);
    let mut dst = Conn::connect(target).expect("connect");
    wait::until(
        "the slots on the target",
        wait::STATE,
        || match common::cluster::owner(target, 0) {
            Some(p) if p == target => Ok(()),
            other => Err(format!("slot 0 owned by {other:?}")),
        },
    );
    let moved: Vec<Reply> = moving.iter().map(|k| dst.cmd(&["DUMP", k])).collect();
    assert_eq!(moved, before, "{flavor:?}: filters moved byte-identical");
    // Writes through the client follow the slots.
    for k in &moving {
        fill(&mut c, k, 3000, 100);
        let r: Vec<i64> = query(&mut c, &[b"APBF.EXISTS", k.as_bytes(), b"i3099", b"i2999"]);
        assert_eq!(r, [1, 1], "{k}");
    }
    let want = keys
        .iter()
        .filter(|k| keyslot(source, k) >= MIGRATED)
        .filter(|k| common::cluster::owner(source, keyslot(source, k)) == Some(source))
        .count() as i64;
    // Redis trims the moved keys from the source on a background thread.
    wait::until("keys left on the source", wait::STATE, || {
        let left: i64 = query(&mut client::connect(source), &["DBSIZE"]);
        if left == want {
            Ok(())
        } else {
            Err(format!("{left} keys, want {want}"))
        }
    });
    replicas_caught_up(&cluster, &[target]);
    for n in &cluster.nodes {
        n.check_log();
    }
    eprintln!(
        "{flavor:?}: {} filters migrated byte-identical",
        moving.len()
    );
}

#[test]
fn apbf_cluster_routing_and_slot_migration() {
    for flavor in flavors() {
        cluster_test(flavor);
    }
}
