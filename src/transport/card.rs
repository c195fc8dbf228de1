//! Business cards: what each rank publishes through PMI at MPI_Init so that
//! the others can choose how to reach it (`oxmpi-card-<rank>` =
//! `<host id>,<pid>`), and, in a second round when the job spans hosts,
//! the UCX worker addresses (`oxmpi-ucx-<rank>`).

use crate::base::consts::*;
use crate::base::error::Result;
use crate::bootstrap::pmi::Pmi;
use crate::bootstrap::wire::{hex_decode, hex_encode};
use crate::err;

/// One rank's card.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Card {
    /// Host name and kernel boot id: equal ids share a node's memory.
    pub host: String,
    pub pid: i32,
}

impl Card {
    /// The host's name as messages show it (the id without its boot id).
    pub fn host_name(&self) -> &str {
        self.host.rsplit_once('_').map_or(&self.host, |(h, _)| h)
    }

    pub fn mine() -> Card {
        Card {
            host: crate::sys::host_id(),
            pid: crate::sys::pid(),
        }
    }

    fn encode(&self) -> String {
        format!("{},{}", self.host, self.pid)
    }

    fn decode(rank: i32, v: &str) -> Result<Card> {
        let (h, p) = v
            .rsplit_once(',')
            .ok_or_else(|| err!(MPI_ERR_INTERN, "bad business card of rank {rank}: {v}"))?;
        Ok(Card {
            host: h.to_string(),
            pid: p.parse().unwrap_or(0),
        })
    }
}

fn bad(e: std::io::Error) -> crate::base::error::Error {
    err!(MPI_ERR_INTERN, "{e}")
}

/// Publishes this rank's card, waits for everyone's and returns all of them
/// by world rank (one barrier; a singleton job reads nothing).
pub fn exchange(pmi: &mut Pmi) -> Result<Vec<Card>> {
    let (rank, size) = (pmi.rank, pmi.size);
    let mut cards = vec![Card::default(); size as usize];
    cards[rank as usize] = Card::mine();
    if size > 1 {
        pmi.put(
            &format!("oxmpi-card-{rank}"),
            &cards[rank as usize].encode(),
        )
        .map_err(bad)?;
        pmi.barrier().map_err(bad)?;
        for r in 0..size {
            if r == rank {
                continue;
            }
            let v = pmi
                .get(&format!("oxmpi-card-{r}"))
                .map_err(bad)?
                .ok_or_else(|| err!(MPI_ERR_INTERN, "rank {r} published no business card"))?;
            cards[r as usize] = Card::decode(r, &v)?;
        }
    }
    Ok(cards)
}

/// The second round, when the job spans hosts: publishes this rank's UCX
/// worker address, waits for everyone's, and returns the addresses of the
/// ranks `wanted` picks (empty for the others), by world rank.
pub fn exchange_ucx(
    pmi: &mut Pmi,
    mine: &[u8],
    wanted: impl Fn(usize) -> bool,
) -> Result<Vec<Vec<u8>>> {
    let (rank, size) = (pmi.rank, pmi.size as usize);
    pmi.put(&format!("oxmpi-ucx-{rank}"), &hex_encode(mine))
        .map_err(bad)?;
    pmi.barrier().map_err(bad)?;
    let mut addrs = vec![Vec::new(); size];
    for (r, a) in addrs.iter_mut().enumerate().filter(|(r, _)| wanted(*r)) {
        let v = pmi
            .get(&format!("oxmpi-ucx-{r}"))
            .map_err(bad)?
            .ok_or_else(|| err!(MPI_ERR_INTERN, "rank {r} published no UCX address"))?;
        *a = hex_decode(&v)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| err!(MPI_ERR_INTERN, "bad UCX address of rank {r}: {v}"))?;
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_drop_the_boot_id() {
        let c = |h: &str| Card {
            host: h.into(),
            pid: 1,
        };
        assert_eq!(c("node7_0123456789abcdef").host_name(), "node7");
        assert_eq!(c("my_host_0123456789abcdef").host_name(), "my_host");
        assert_eq!(c("plain").host_name(), "plain");
        assert!(!Card::mine().host_name().is_empty());
    }
}
