pub mod tshark;
