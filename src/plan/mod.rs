//! `rasgk plan`: phones registering against the gatekeeper core in virtual time, and the
//! report of what the C-LANs carried ([`chart`]: SVG charts, [`page`]: the HTML page).

pub mod chart;
pub mod page;
