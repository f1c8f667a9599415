//! When something reached a phone: the kernel's receive time of a datagram or of the TCP
//! segment that carried a frame, as wall-clock time since the UNIX epoch.
//!
//! Time to service runs from the RCF to the empty TPKT frame that puts the socket in
//! service. Read from the phone's clock when its task gets round to them, both would carry
//! the time a storm process of thousands of phones on one thread takes to reach each — a
//! hundred milliseconds and more under a burst — which says how busy the simulator is, not
//! how fast the gatekeeper serves. A real phone hears both the moment they arrive, so the
//! storm takes the moment the kernel received each (`SO_TIMESTAMPNS`): the RCF's from the
//! phones' UDP port (`quinn-udp` asks for it), the frame's from the TCP socket ([`read`]).
//! Where the kernel gives no time (not Linux), the time the phone read it stands in.

use std::io;
use std::time::Duration;

use tokio::io::Interest;
use tokio::net::TcpStream;

use super::wall_clock::wall_time;

/// Asks the kernel to stamp what arrives on `socket` (a listener's accepted connections
/// inherit it). Best effort: without it [`read`] stamps with the time it read.
pub(super) fn ask(socket: &impl std::os::fd::AsRawFd) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    crate::sockets::set_int_option(socket, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1);
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = socket;
}

/// Reads from `stream` into `buffer`: how many octets (0 at the end of the stream), and when
/// the kernel received the last segment read.
pub(super) async fn read(stream: &TcpStream, buffer: &mut [u8]) -> io::Result<(usize, Duration)> {
    loop {
        stream.readable().await?;
        match stream.try_io(Interest::READABLE, || receive(stream, buffer)) {
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
            result => return result,
        }
    }
}

/// One `recvmsg` with room for the kernel's time.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn receive(stream: &TcpStream, buffer: &mut [u8]) -> io::Result<(usize, Duration)> {
    use std::os::fd::AsRawFd;
    // Room for a cmsghdr and a timespec, aligned as cmsghdr wants.
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    // SAFETY: a zeroed msghdr is valid; its pointers are set to live buffers below.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: recvmsg writes at most iov_len octets into `buffer` and msg_controllen into
    // `control`, both alive for the call.
    let read = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut message, 0) };
    let read = usize::try_from(read).map_err(|_| io::Error::last_os_error())?;
    let mut at = None;
    // SAFETY: the CMSG macros walk the control buffer recvmsg filled, within
    // msg_controllen; each header is checked before its data is read.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            let h = &*header;
            if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPNS {
                let time: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast());
                at = Some(Duration::new(
                    u64::try_from(time.tv_sec).unwrap_or(0),
                    u32::try_from(time.tv_nsec).unwrap_or(0),
                ));
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    Ok((read, at.unwrap_or_else(wall_time)))
}

/// Elsewhere: a plain read, stamped when read.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn receive(stream: &TcpStream, buffer: &mut [u8]) -> io::Result<(usize, Duration)> {
    let read = stream.try_read(buffer)?;
    Ok((read, wall_time()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_segment_is_stamped_when_it_arrived_not_when_it_is_read() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        ask(&listener);
        let mut phone = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        let mut buffer = [0u8; 16];
        // Linux turns receive stamping on for the whole host a moment after the first socket
        // asks (a deferred switch, late on a loaded machine); until then segments arrive
        // unstamped and are stamped when read. So a few tries, one of which must be stamped.
        let mut stamps = Vec::new();
        for _ in 0..20 {
            let sent = wall_time();
            phone.write_all(&[3, 0, 0, 4]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(80)).await;
            let (n, at) = read(&accepted, &mut buffer).await.unwrap();
            let read_at = wall_time();
            assert_eq!(&buffer[..n], &[3, 0, 0, 4]);
            assert!(
                at + Duration::from_millis(5) >= sent,
                "{at:?} before {sent:?}"
            );
            stamps.push((at, read_at));
            if at + Duration::from_millis(50) < read_at {
                break;
            }
        }
        if cfg!(target_os = "linux") {
            assert!(
                stamps
                    .iter()
                    .any(|&(at, read_at)| at + Duration::from_millis(50) < read_at),
                "stamped when read, not when it arrived: {stamps:?}"
            );
        }
        drop(phone);
        let (n, _) = read(&accepted, &mut buffer).await.unwrap();
        assert_eq!(n, 0, "the end of the stream");
    }
}
