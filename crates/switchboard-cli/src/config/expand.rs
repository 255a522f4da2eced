//! The editors' variables in a server entry of VS Code or Cursor
//! (`${workspaceFolder}`, `${userHome}`, `${env:NAME}`, …), expanded as the
//! editor would before starting the server. Pure: what a variable stands for
//! comes from the caller. `${input:…}` asks the user in the editor; nobody is
//! there to ask, so it is refused.

/// What the variables stand for.
pub struct Vars<'a> {
    /// The workspace folder (`${workspaceFolder}`).
    pub workspace: &'a str,
    /// An environment variable's value, if set (`${env:NAME}`, and `HOME` for
    /// `${userHome}`).
    pub var: &'a dyn Fn(&str) -> Option<String>,
}

/// Why a value could not be expanded; each names the variable as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    #[error(
        "`${{input:{0}}}` asks the user in the editor, and switchboard cannot ask: \
         give the value itself, or `${{env:NAME}}` to read it from the environment"
    )]
    Input(String),
    #[error("`${{env:{0}}}`: the environment variable {0} is not set")]
    Unset(String),
    #[error("`${{userHome}}`: HOME is not set")]
    NoHome,
    #[error(
        "unknown variable `${{{0}}}` (known: workspaceFolder, workspaceFolderBasename, \
         userHome, env:NAME, pathSeparator)"
    )]
    Unknown(String),
}

/// `text` with each `${…}` replaced. A `${` with no closing `}` is text.
///
/// # Errors
/// The first variable that cannot be expanded.
pub fn expand(text: &str, vars: &Vars<'_>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let name = &rest[start + 2..start + 2 + len];
        out.push_str(&value(name, vars)?);
        rest = &rest[start + 2 + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn value(name: &str, vars: &Vars<'_>) -> Result<String, ExpandError> {
    if let Some(id) = name.strip_prefix("input:") {
        return Err(ExpandError::Input(id.to_owned()));
    }
    if let Some(var) = name.strip_prefix("env:") {
        return (vars.var)(var).ok_or_else(|| ExpandError::Unset(var.to_owned()));
    }
    match name {
        "workspaceFolder" => Ok(vars.workspace.to_owned()),
        "workspaceFolderBasename" => Ok(vars
            .workspace
            .rsplit('/')
            .find(|s| !s.is_empty())
            .unwrap_or("")
            .to_owned()),
        "userHome" => (vars.var)("HOME").ok_or(ExpandError::NoHome),
        "pathSeparator" | "/" => Ok("/".to_owned()),
        other => Err(ExpandError::Unknown(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars_with(f: &dyn Fn(&str) -> Option<String>) -> Vars<'_> {
        Vars {
            workspace: "/home/u/proj",
            var: f,
        }
    }

    fn home(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".to_owned()),
            "TOKEN" => Some("t0k".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn the_editors_variables_are_expanded() {
        let v = vars_with(&home);
        assert_eq!(
            expand("${workspaceFolder}/server.py", &v).unwrap(),
            "/home/u/proj/server.py"
        );
        assert_eq!(
            expand("${userHome}${/}.cfg ${workspaceFolderBasename}", &v).unwrap(),
            "/home/u/.cfg proj"
        );
        assert_eq!(expand("Bearer ${env:TOKEN}", &v).unwrap(), "Bearer t0k");
        assert_eq!(expand("no variables", &v).unwrap(), "no variables");
        // Not a variable: left as it is.
        assert_eq!(expand("cost: ${5", &v).unwrap(), "cost: ${5");
    }

    #[test]
    fn what_cannot_be_expanded_is_named() {
        let v = vars_with(&home);
        let e = expand("${input:api-key}", &v).unwrap_err();
        assert_eq!(e, ExpandError::Input("api-key".to_owned()));
        assert!(
            e.to_string()
                .starts_with("`${input:api-key}` asks the user"),
            "{e}"
        );
        assert_eq!(
            expand("x ${env:MISSING}", &v).unwrap_err().to_string(),
            "`${env:MISSING}`: the environment variable MISSING is not set"
        );
        assert_eq!(
            expand("${cwd}", &v).unwrap_err(),
            ExpandError::Unknown("cwd".to_owned())
        );
        assert_eq!(
            expand("${userHome}", &vars_with(&|_| None)).unwrap_err(),
            ExpandError::NoHome
        );
    }
}
