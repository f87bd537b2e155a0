//! A test host of its own for a broker: a network namespace joined to this one by two veth
//! links, one its clients reach it by and one it reaches PostgreSQL by, so the database link
//! can be cut silently while the clients still reach the broker. A cut takes the link's
//! carrier away: what the broker sends to PostgreSQL vanishes, nothing answers, no reset
//! comes back, as when a switch or a firewall drops packets. Everything stays inside this
//! machine (the addresses are private, the links end here) and is removed on drop.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct Host {
    name: String,
    /// This host's side of the database link (taken down by a cut).
    db_link: String,
    client_link: String,
    n: u32,
}

impl Host {
    /// A namespace named after this process and how many it made before, or `None` (with the reason printed) where
    /// namespaces cannot be made: not root, no `ip`, no veth.
    pub fn create() -> Option<Host> {
        // Unique per host in this process: cases run two at a time, and a second host named
        // as the first would remove it on creation (and both cases would skip).
        static MADE: AtomicU32 = AtomicU32::new(0);
        let k = MADE.fetch_add(1, Ordering::Relaxed);
        let n = (std::process::id() + 97 * k) % 230 + 20;
        let host = Host {
            name: format!("regent-f{n}"),
            db_link: format!("rgdb{n}"),
            client_link: format!("rgcl{n}"),
            n,
        };
        host.remove();
        let ns = host.name.as_str();
        let steps: Vec<Vec<String>> = vec![
            words(&format!("ip netns add {ns}")),
            words(&format!("ip netns exec {ns} ip link set lo up")),
        ];
        let mut all = steps;
        for (link, subnet) in [(&host.client_link, 77), (&host.db_link, 78)] {
            let inner = format!("{link}i");
            let n = host.n;
            for step in [
                format!("ip link add {link} type veth peer name {inner}"),
                format!("ip link set {inner} netns {ns}"),
                format!("ip addr add 10.{subnet}.{n}.1/24 dev {link}"),
                format!("ip link set {link} up"),
                format!("ip netns exec {ns} ip addr add 10.{subnet}.{n}.2/24 dev {inner}"),
                format!("ip netns exec {ns} ip link set {inner} up"),
            ] {
                all.push(words(&step));
            }
        }
        for step in all {
            if let Err(why) = run(&step) {
                eprintln!("network namespaces unavailable ({why}): network fault cases skipped");
                host.remove();
                return None;
            }
        }
        Some(host)
    }

    /// Runs a program inside the namespace: the launcher for `common::serve_via`.
    pub fn launcher(&self) -> Vec<String> {
        words(&format!("ip netns exec {}", self.name))
    }

    /// Where clients reach the broker.
    pub fn broker_address(&self) -> String {
        format!("10.77.{}.2", self.n)
    }

    /// Where the broker reaches PostgreSQL (this host's end of the database link).
    pub fn database_address(&self) -> String {
        format!("10.78.{}.1", self.n)
    }

    /// The database link's carrier gone: the broker's packets to PostgreSQL are dropped.
    pub fn cut_database_link(&self) {
        run(&words(&format!("ip link set {} down", self.db_link))).expect("cutting the link");
    }

    pub fn heal_database_link(&self) {
        run(&words(&format!("ip link set {} up", self.db_link))).expect("healing the link");
    }

    fn remove(&self) {
        for step in [
            format!("ip netns del {}", self.name),
            format!("ip link del {}", self.db_link),
            format!("ip link del {}", self.client_link),
        ] {
            let _ = run(&words(&step));
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.remove();
    }
}

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

fn run(argv: &[String]) -> Result<(), String> {
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .map_err(|e| format!("{}: {e}", argv.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            argv.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
