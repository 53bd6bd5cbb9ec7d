//! `keys`: the API keys of `serve --http --auth FILE`. A new key is printed once, on stdout;
//! the file keeps only its hash (`locara-auth`).

use std::{path::Path, process::ExitCode};

use anyhow::{Context as _, bail};
use locara_auth::{AuthFile, Limits};

use crate::cli::KeysCommand;

/// `locara keys …`.
pub(crate) fn keys(command: &KeysCommand) -> anyhow::Result<ExitCode> {
    match command {
        KeysCommand::Add {
            id,
            app,
            auth,
            max_concurrent,
            rate_per_minute,
        } => add(
            id,
            app,
            auth,
            Limits {
                max_concurrent: *max_concurrent,
                rate_per_minute: *rate_per_minute,
            },
        ),
        KeysCommand::List { auth } => list(auth),
        KeysCommand::Remove { id, auth } => remove(id, auth),
    }
}

fn add(id: &str, app: &Path, auth: &Path, limits: Limits) -> anyhow::Result<ExitCode> {
    let mut file = AuthFile::read_or_default(auth)?;
    if file.keys.iter().any(|k| k.id == id) {
        bail!(
            "{} already has a key `{id}`: remove it first (`locara keys remove {id} --auth {}`) or pick another id",
            auth.display(),
            auth.display()
        );
    }
    // The app is named by an absolute path, so the file means the same from any directory.
    let app = std::fs::canonicalize(app)
        .with_context(|| format!("cannot find the app manifest {}", app.display()))?;
    locara_facade::AppManifest::from_json(
        &std::fs::read_to_string(&app)
            .with_context(|| format!("cannot read the app manifest {}", app.display()))?,
    )
    .with_context(|| format!("invalid app manifest {}", app.display()))?;
    let (key, entry) = locara_auth::new_key(id, &app, limits)?;
    file.keys.push(entry);
    // Checked as the server will load it before it is written.
    let dir = auth.parent().unwrap_or(Path::new("."));
    locara_auth::Auth::from_file(&file, dir, auth)?;
    file.write(auth)?;
    eprintln!(
        "added key `{id}` for {} to {}; it is shown once, here:",
        app.display(),
        auth.display()
    );
    crate::output::stdout(&format!("{key}\n"))?;
    Ok(ExitCode::SUCCESS)
}

fn list(auth: &Path) -> anyhow::Result<ExitCode> {
    use std::fmt::Write as _;
    let file = AuthFile::read(auth)?;
    let mut text = String::new();
    for key in &file.keys {
        let _ = writeln!(
            text,
            "{}\t{}\t{} in flight, {} a minute",
            key.id,
            key.app.display(),
            key.limits.max_concurrent,
            key.limits.rate_per_minute
        );
    }
    if let Some(jwt) = &file.jwt {
        let _ = writeln!(
            text,
            "jwt:*\t{}\tJWTs for {} from {}",
            jwt.app.display(),
            jwt.audience,
            jwt.issuer.as_deref().unwrap_or("any issuer")
        );
    }
    crate::output::stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn remove(id: &str, auth: &Path) -> anyhow::Result<ExitCode> {
    let mut file = AuthFile::read(auth)?;
    let before = file.keys.len();
    file.keys.retain(|k| k.id != id);
    if file.keys.len() == before {
        bail!(
            "{} has no key `{id}` (`locara keys list --auth {}` shows them)",
            auth.display(),
            auth.display()
        );
    }
    file.write(auth)?;
    eprintln!("removed key `{id}`; a running server refuses it within seconds");
    Ok(ExitCode::SUCCESS)
}
