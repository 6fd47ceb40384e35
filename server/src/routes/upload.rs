//! `POST /api/upload` (opt-in): multipart `file` fields become data URLs the UI attaches to a
//! message. Each file is capped (`max_upload_bytes`, 413 beyond, naming the file) as it
//! streams in. A body that goes quiet for the body timeout is 408: an upload may be slow, so the
//! timeout is between chunks, not for the whole body as for JSON.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine;
use futures_util::StreamExt;
use http::header;
use http_body_util::BodyDataStream;
use lmchatkit_protocol::{UploadResponse, UploadedFile};

use crate::api::{ApiError, Response, json};
use crate::routes::Req;
use crate::state::State;

pub(crate) async fn upload(state: &State, req: Req) -> Result<Response, ApiError> {
    let content_type = req
        .parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let boundary = multer::parse_boundary(content_type).map_err(|_| {
        ApiError::UnsupportedMediaType("Content-Type must be multipart/form-data".into())
    })?;
    let cap = state.settings.max_upload_bytes;
    let limits = multer::Constraints::new().size_limit(
        multer::SizeLimit::new()
            .whole_stream(
                cap.saturating_mul(8)
                    .max(state.settings.limits.body_bytes as u64),
            )
            .per_field(cap),
    );
    let idle = state.settings.limits.timeout;
    let stalled = Arc::new(AtomicBool::new(false));
    let flag = stalled.clone();
    let chunks = futures_util::stream::unfold(Some(BodyDataStream::new(req.body)), move |body| {
        let flag = flag.clone();
        async move {
            let mut body = body?;
            match tokio::time::timeout(idle, body.next()).await {
                Ok(Some(chunk)) => Some((chunk, Some(body))),
                Ok(None) => None,
                Err(_) => {
                    flag.store(true, Ordering::Relaxed);
                    Some((Err("the upload stalled".into()), None))
                }
            }
        }
    });
    let mut form = multer::Multipart::with_constraints(chunks, boundary, limits);
    let timed_out = || {
        ApiError::RequestTimeout(format!(
            "the upload sent nothing for {} s",
            idle.as_secs_f32()
        ))
    };
    let mut files = Vec::new();
    loop {
        let field = match form.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(_) if stalled.load(Ordering::Relaxed) => return Err(timed_out()),
            Err(e) => return Err(multipart_error(e, cap, None)),
        };
        if field.name() != Some("file") {
            continue;
        }
        let name = field.file_name().unwrap_or("file").to_owned();
        let mime = field
            .content_type()
            .map(|m| m.essence_str().to_owned())
            .filter(|m| m != "application/octet-stream")
            .unwrap_or_else(|| {
                mime_guess::from_path(&name)
                    .first_or_octet_stream()
                    .essence_str()
                    .to_owned()
            });
        let data = field
            .bytes()
            .await
            .map_err(|e| match stalled.load(Ordering::Relaxed) {
                true => timed_out(),
                false => multipart_error(e, cap, Some(&name)),
            })?;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&data);
        files.push(UploadedFile {
            data_url: format!("data:{mime};base64,{b64}"),
            name,
            mime_type: mime,
            size: data.len() as u64,
        });
    }
    if files.is_empty() {
        return Err(ApiError::BadRequest("no file field in the upload".into()));
    }
    Ok(json(http::StatusCode::OK, &UploadResponse { files }))
}

fn multipart_error(e: multer::Error, cap: u64, name: Option<&str>) -> ApiError {
    match e {
        multer::Error::FieldSizeExceeded { .. } | multer::Error::StreamSizeExceeded { .. } => {
            ApiError::PayloadTooLarge(format!(
                "file {:?} exceeds {cap} bytes",
                name.unwrap_or("upload")
            ))
        }
        other => ApiError::BadRequest(format!("invalid upload: {other}")),
    }
}
