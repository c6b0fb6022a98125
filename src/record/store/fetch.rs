//! Reading recordings from object storage: `tooltap check|report|export s3://bucket/prefix` and
//! `tooltap replay --recordings s3://…`.
//!
//! Input: an `s3://` location (reached through the AWS environment variables, see
//! [`super::S3Settings::with_env`]). Output: a temporary folder holding every object under the
//! prefix at its relative path, which the command then reads as it reads any folder; the folder
//! is deleted when the [`Fetched`] is dropped. Objects are streamed to disk chunk by chunk, so
//! memory stays bounded whatever their size; the listing is paged by the store. Key segments
//! are reduced to safe path segments ([`crate::record::layout::segment`]): no key can steer a
//! path outside the folder.

use std::io::Write;
use std::path::{Path, PathBuf};

use futures_util::StreamExt;
use object_store::{ObjectStore, ObjectStoreExt};

use super::{S3Settings, StoreError, StoreUrl};
use crate::record::layout::{create_folder, owner_only, segment};

/// A local copy of a prefix; deleted on drop.
#[derive(Debug)]
pub struct Fetched {
    dir: PathBuf,
    /// Objects copied.
    pub objects: usize,
}

impl Fetched {
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Fetched {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `Ok(None)` when `location` is a folder, not an `s3://` location.
pub fn localize(location: &Path) -> Result<Option<Fetched>, StoreError> {
    let Some(text) = location.to_str() else {
        return Ok(None);
    };
    let Some(url) = StoreUrl::parse(text) else {
        return Ok(None);
    };
    let url = url.map_err(|error| StoreError::Io {
        url: text.to_string(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, error),
    })?;
    let settings = S3Settings::default().with_env(|name| std::env::var(name).ok());
    fetch(&url, &settings).map(Some)
}

/// Copies every object under `url`'s prefix into a new temporary folder. Runs on a thread of its
/// own with its own runtime, so it can be called from sync code and from inside a runtime alike.
pub fn fetch(url: &StoreUrl, settings: &S3Settings) -> Result<Fetched, StoreError> {
    let dir = std::env::temp_dir().join(format!(
        "tooltap-fetch-{}-{}",
        std::process::id(),
        crate::record::layout::process_random()
    ));
    let io = |source| StoreError::Io {
        url: url.to_string(),
        source,
    };
    let _ = std::fs::remove_dir_all(&dir);
    create_folder(&dir).map_err(io)?;
    let mut fetched = Fetched { dir, objects: 0 };
    let store = super::open(url, settings)?;
    let copied = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(io)?;
                runtime.block_on(copy_all(&*store, url, &fetched.dir))
            })
            .join()
            .unwrap_or_else(|_| Err(io(std::io::Error::other("the fetching thread panicked"))))
    })?;
    fetched.objects = copied;
    Ok(fetched)
}

async fn copy_all(
    store: &dyn ObjectStore,
    url: &StoreUrl,
    dir: &Path,
) -> Result<usize, StoreError> {
    let failed = |source| StoreError::Store {
        url: url.to_string(),
        source,
    };
    let io = |source| StoreError::Io {
        url: url.to_string(),
        source,
    };
    let prefix = url.prefix_path();
    let mut listing = store.list(prefix.as_ref());
    let mut copied = 0;
    while let Some(meta) = listing.next().await {
        let meta = meta.map_err(failed)?;
        let Some(target) = local_path(dir, prefix.as_ref(), &meta.location) else {
            continue;
        };
        if let Some(folder) = target.parent() {
            create_folder(folder).map_err(io)?;
        }
        let mut file = owner_only()
            .write(true)
            .create_new(true)
            .open(&target)
            .map_err(io)?;
        let mut body = store
            .get(&meta.location)
            .await
            .map_err(failed)?
            .into_stream();
        while let Some(chunk) = body.next().await {
            file.write_all(&chunk.map_err(failed)?).map_err(io)?;
        }
        copied += 1;
    }
    Ok(copied)
}

/// Where an object goes under `dir`: its key below the prefix, each segment made safe.
fn local_path(
    dir: &Path,
    prefix: Option<&object_store::path::Path>,
    location: &object_store::path::Path,
) -> Option<PathBuf> {
    let parts: Vec<_> = match prefix {
        Some(prefix) => location.prefix_match(prefix)?.collect(),
        None => location.parts().collect(),
    };
    if parts.is_empty() {
        return None;
    }
    let mut path = dir.to_path_buf();
    for part in parts {
        path.push(segment(part.as_ref()));
    }
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_land_under_the_folder_whatever_they_hold() {
        let dir = Path::new("/tmp/x");
        let prefix = object_store::path::Path::from("rec");
        let key = object_store::path::Path::from("rec/r/2026-12-06/t1.jsonl");
        assert_eq!(
            local_path(dir, Some(&prefix), &key),
            Some(PathBuf::from("/tmp/x/r/2026-12-06/t1.jsonl"))
        );
        let sneaky = object_store::path::Path::from_iter(["rec", "..", "etc"]);
        let landed = local_path(dir, Some(&prefix), &sneaky).expect("a path");
        assert!(landed.starts_with(dir), "{}", landed.display());
        assert!(
            landed
                .components()
                .all(|part| part != std::path::Component::ParentDir),
            "{}",
            landed.display()
        );
        assert_eq!(local_path(dir, Some(&prefix), &prefix), None);
    }
}
