//! `rasgk plan`: phones registering against the gatekeeper core in virtual time, and the
//! report of what the C-LANs carried ([`chart`]: SVG charts).

pub mod chart;
