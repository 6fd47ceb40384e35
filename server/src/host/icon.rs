//! Icons of MCP servers, tools and prompts as the service hands them to the browser: an image
//! of an allowed type, at most [`MAX_ICON_BYTES`], whose bytes are what its type says.
//! [`IconImage::new`] is the one gate: a host's icon is built through it, and the route
//! (`GET {prefix}/api/icons/{kind}/{name}`) serves nothing else.
//!
//! Decisions:
//! - **The browser never fetches an icon from an MCP server's host.** MCP icons are URLs
//!   (`https:`, or `data:`) the server chose; loading one in the page would tell that host who
//!   looks at the chat and when, and would need the page's CSP opened to every such host.
//!   The service fetches it (the hub, under an [`OutboundPolicy`](crate::mcp::OutboundPolicy))
//!   and serves the bytes from its own origin, through the access layer (an icon of a tool
//!   the principal cannot see is a 404), so the page's `img-src 'self' data: blob:` stays.
//! - **Image types only**: PNG, JPEG, GIF, WebP, AVIF and SVG ([`ICON_TYPES`]); the bytes must
//!   start as the type says (an HTML page labelled `image/png` is refused). SVG is served with
//!   `Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; sandbox`, so
//!   even opened on its own it runs nothing; in the page it is an `<img>`, which never runs
//!   scripts.
//! - **Size-capped** at [`MAX_ICON_BYTES`] (64 KiB): an icon is drawn at 16–20 px.

use std::fmt;

use bytes::Bytes;

/// The largest icon served (64 KiB).
pub const MAX_ICON_BYTES: usize = 64 << 10;

/// The image types an icon may have.
pub const ICON_TYPES: [&str; 6] = [
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/avif",
    "image/svg+xml",
];

/// Whose icon: a server's, a tool's or a prompt's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IconOf {
    /// An MCP server (by its configured name).
    Server,
    /// A tool (by its exposed name, as the model calls it).
    Tool,
    /// A prompt (by its exposed name, as `/name` calls it).
    Prompt,
}

impl IconOf {
    /// From the route's word (`server`, `tool`, `prompt`).
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "server" => Some(Self::Server),
            "tool" => Some(Self::Tool),
            "prompt" => Some(Self::Prompt),
            _ => None,
        }
    }
}

/// Why an icon is not served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IconRefused {
    /// Not one of [`ICON_TYPES`].
    #[error("{0:?} is not an image type icons may have")]
    NotImage(String),
    /// The bytes are not what the type says.
    #[error("the bytes are not {0}")]
    Mismatch(&'static str),
    /// Over [`MAX_ICON_BYTES`].
    #[error("the icon has more than {MAX_ICON_BYTES} bytes")]
    TooLarge,
    /// It could not be fetched (the reason, without URLs' secrets).
    #[error("the icon could not be fetched: {0}")]
    Unreachable(String),
}

/// An icon ready to serve: an allowed image type and its bytes (see the module docs).
#[derive(Clone, PartialEq, Eq)]
pub struct IconImage {
    mime: &'static str,
    bytes: Bytes,
}

impl fmt::Debug for IconImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IconImage")
            .field("mime", &self.mime)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl IconImage {
    /// An icon of type `mime` (parameters and case ignored; `image/jpg` is JPEG), refused when
    /// the type is not an image type icons may have, the bytes are not of that type, or there
    /// are more than [`MAX_ICON_BYTES`].
    ///
    /// ```
    /// use lmchatkit::host::{IconImage, IconRefused};
    /// let png = IconImage::new("image/png", b"\x89PNG\r\n\x1a\n....".to_vec()).unwrap();
    /// assert_eq!(png.mime(), "image/png");
    /// assert!(matches!(IconImage::new("text/html", b"<html>".to_vec()), Err(IconRefused::NotImage(_))));
    /// assert!(matches!(IconImage::new("image/png", b"<html>".to_vec()), Err(IconRefused::Mismatch(_))));
    /// ```
    pub fn new(mime: &str, bytes: impl Into<Bytes>) -> Result<Self, IconRefused> {
        let bytes = bytes.into();
        let mime = icon_type(mime).ok_or_else(|| IconRefused::NotImage(mime.to_owned()))?;
        if bytes.len() > MAX_ICON_BYTES {
            return Err(IconRefused::TooLarge);
        }
        if !looks_like(mime, &bytes) {
            return Err(IconRefused::Mismatch(mime));
        }
        Ok(Self { mime, bytes })
    }

    /// The image type (one of [`ICON_TYPES`]).
    pub fn mime(&self) -> &'static str {
        self.mime
    }

    /// The image.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
}

/// The allowed type `mime` names, if it names one.
pub fn icon_type(mime: &str) -> Option<&'static str> {
    let essence = mime
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let essence = match essence.as_str() {
        "image/jpg" | "image/pjpeg" => "image/jpeg",
        other => other,
    };
    ICON_TYPES.into_iter().find(|t| *t == essence)
}

/// The bytes start as `mime` says (SVG: an XML document whose first element is `<svg`).
fn looks_like(mime: &str, b: &[u8]) -> bool {
    match mime {
        "image/png" => b.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => b.starts_with(&[0xFF, 0xD8, 0xFF]),
        "image/gif" => b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a"),
        "image/webp" => b.len() >= 12 && b.starts_with(b"RIFF") && &b[8..12] == b"WEBP",
        "image/avif" => b.len() >= 12 && &b[4..8] == b"ftyp" && &b[8..12] == b"avif",
        "image/svg+xml" => svg_root(b),
        _ => false,
    }
}

/// The first element of an XML text is `<svg` (after a BOM, the XML declaration, comments and
/// a doctype).
fn svg_root(b: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(b) else {
        return false;
    };
    let mut rest = text.trim_start_matches('\u{feff}').trim_start();
    loop {
        if let Some(r) = rest.strip_prefix("<?") {
            let Some((_, after)) = r.split_once("?>") else {
                return false;
            };
            rest = after.trim_start();
        } else if let Some(r) = rest.strip_prefix("<!--") {
            let Some((_, after)) = r.split_once("-->") else {
                return false;
            };
            rest = after.trim_start();
        } else if let Some(r) = rest.strip_prefix("<!") {
            let Some((_, after)) = r.split_once('>') else {
                return false;
            };
            rest = after.trim_start();
        } else {
            return rest
                .strip_prefix("<svg")
                .is_some_and(|r| r.starts_with(|c: char| c.is_whitespace() || c == '>'));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_image_types_whose_bytes_match_are_icons() {
        assert!(IconImage::new("image/png; charset=x", b"\x89PNG\r\n\x1a\nrest".to_vec()).is_ok());
        assert_eq!(
            IconImage::new("IMAGE/JPG", vec![0xFF, 0xD8, 0xFF, 0xE0]).map(|i| i.mime()),
            Ok("image/jpeg")
        );
        assert!(IconImage::new("image/gif", b"GIF89a...".to_vec()).is_ok());
        assert!(IconImage::new("image/webp", b"RIFF\0\0\0\0WEBPVP8 ".to_vec()).is_ok());
        let svg =
            "<?xml version=\"1.0\"?>\n<!-- a dot -->\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>";
        assert!(IconImage::new("image/svg+xml", svg.as_bytes().to_vec()).is_ok());
        for (mime, bytes) in [
            ("text/html", &b"<svg>"[..]),
            ("application/octet-stream", b"\x89PNG\r\n\x1a\n"),
            ("image/x-icon", b"\0\0\x01\0"),
            ("image/svg", b"<svg/>"),
        ] {
            assert_eq!(
                IconImage::new(mime, bytes.to_vec()),
                Err(IconRefused::NotImage(mime.into())),
                "{mime}"
            );
        }
        assert_eq!(
            IconImage::new("image/svg+xml", b"<html><svg></svg></html>".to_vec()),
            Err(IconRefused::Mismatch("image/svg+xml"))
        );
        assert_eq!(
            IconImage::new("image/png", b"<script>alert(1)</script>".to_vec()),
            Err(IconRefused::Mismatch("image/png"))
        );
    }

    #[test]
    fn an_icon_over_the_cap_is_refused() {
        let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
        big.resize(MAX_ICON_BYTES, 0);
        assert!(IconImage::new("image/png", big.clone()).is_ok());
        big.push(0);
        assert_eq!(IconImage::new("image/png", big), Err(IconRefused::TooLarge));
    }
}
