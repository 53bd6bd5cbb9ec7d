//! Unit tests for chain binding and search ranking.

use serde_json::json;

use crate::{
    chain::bind,
    search::{Document, rank},
};

#[test]
fn refs_bind_to_earlier_outputs() {
    let outputs = vec![json!({"text": "hello", "pages": [{"n": 1}, {"n": 2}]})];
    let args = json!({"a": {"$ref": "steps.0.output.text"}, "b": [{"$ref": "steps.0.output.pages.1.n"}], "c": 3});
    assert_eq!(
        bind(&args, &outputs).unwrap(),
        json!({"a": "hello", "b": [2], "c": 3})
    );
    let whole = json!({"all": {"$ref": "steps.0.output"}});
    assert_eq!(bind(&whole, &outputs).unwrap()["all"], outputs[0]);
}

#[test]
fn objects_with_more_keys_than_ref_are_left_alone() {
    let args = json!({"x": {"$ref": "steps.0.output", "other": 1}});
    assert_eq!(bind(&args, &[]).unwrap(), args);
}

#[test]
fn bad_refs_say_where_and_why() {
    let outputs = vec![json!({"text": "hello"})];
    let cases = [
        (
            json!({"a": {"$ref": "steps.0.output.missing"}}),
            "/a",
            "`steps.0.output` has no `missing`; its fields are: text",
        ),
        (
            json!({"a": [0, {"$ref": "steps.1.output"}]}),
            "/a/1",
            "`steps.1.output` names step 1, but only steps 0 to 0 ran before this one",
        ),
        (
            json!({"a": {"$ref": "output.text"}}),
            "/a",
            "`output.text` names no earlier step: refer to one as `steps.N.output…` or `ID.output…`, or to a for_each item by its name",
        ),
        (json!({"a": {"$ref": 7}}), "/a", "`$ref` must be a string"),
        (
            json!({"a": {"$ref": "steps.0.output.text.x"}}),
            "/a",
            "`steps.0.output.text` has no `x`; it is a string",
        ),
    ];
    for (args, pointer, message) in cases {
        let error = bind(&args, &outputs).unwrap_err();
        assert_eq!(
            (error.pointer.as_str(), error.message.as_str()),
            (pointer, message)
        );
    }
    let bare = bind(&json!({"$ref": "steps.0"}), &outputs).unwrap_err();
    assert_eq!(
        bare.message,
        "`steps.0` is not of the form `steps.N.output[.field…]` (or `ID.output…`, `ID.files…`, `item…`)"
    );
    let first = bind(&json!({"$ref": "steps.0.output"}), &[]).unwrap_err();
    assert_eq!(
        first.message,
        "`steps.0.output` names step 0, but this is the first step"
    );
}

fn doc(id: &str, name: &str, description: &str) -> Document {
    Document {
        id: id.to_owned(),
        name: name.to_owned(),
        description: description.to_owned(),
    }
}

#[test]
fn search_ranks_ids_above_mentions() {
    let docs = vec![
        doc(
            "pdf.extract-text",
            "Extract PDF text",
            "Extracts the text layer of a PDF, page by page.",
        ),
        doc(
            "pdf.split",
            "Split a PDF",
            "Splits a PDF into several PDFs by page ranges.",
        ),
        doc(
            "text.chunk",
            "Chunk text",
            "Splits long text into chunks for embedding.",
        ),
    ];
    let ids = |query| {
        rank(&docs, query)
            .into_iter()
            .map(|(i, _)| docs[i].id.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids("pdf split"),
        ["pdf.split", "pdf.extract-text", "text.chunk"]
    );
    assert_eq!(ids("chunk"), ["text.chunk"]);
    assert_eq!(ids("split text into chunks")[0], "text.chunk");
    assert_eq!(
        ids("extr"),
        ["pdf.extract-text"],
        "a prefix of three or more letters matches"
    );
    assert!(ids("audio").is_empty());
}
