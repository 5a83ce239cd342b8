from toolscout.catalog import ToolRecord
from toolscout.index.text import (
    dense_document,
    description_document,
    leading_verb,
    name_document,
    tokenize,
)

TOOL = ToolRecord(
    id="github__createPullRequest",
    name="createPullRequest",
    server="github",
    description="Open a pull request from a branch.",
    input_schema={
        "type": "object",
        "properties": {
            "base_branch": {"type": "string", "description": "Branch to merge into"},
            "merge_method": {"type": "string", "enum": ["squash", "rebase"]},
            "reviewers": {"type": "array", "items": {"type": "object", "properties": {"login": {}}}},
        },
    },
)


def test_identifiers_are_split_on_snake_camel_and_kebab_case():
    # "by" is a stopword once split out of profileByID.
    assert tokenize("get_user-profileByID HTTPServer v2") == [
        "get", "user", "profile", "id", "http", "server", "v", "2"
    ]


def test_words_of_any_script_are_kept_whole():
    assert tokenize("Météo à Zürich") == ["météo", "à", "zürich"]


def test_tokens_are_case_folded_and_stopwords_dropped():
    assert tokenize("Can you please Find THE weather in Paris for me") == ["find", "weather", "paris"]


def test_whitespace_of_any_kind_separates_words_and_never_joins_identifier_parts():
    # Tokens are made per whitespace-separated chunk (and cached); the words are those of the text.
    text = "getUser\u00a0by-ID\tHTTPServer2\nsend,email  (weekly)report.v2"
    assert tokenize(text) == ["get", "user", "id", "http", "server", "2", "send", "email", "weekly", "report", "v", "2"]
    assert tokenize(text) == tokenize(text)  # the second time from the cache, the same
    assert tokenize("Sending reports", stem=True) == ["send", "report"]
    assert tokenize("Sending reports") == ["sending", "reports"]


def test_stemming_conflates_word_forms():
    assert tokenize("searching searches", stem=True) == ["search", "search"]


def test_the_name_document_holds_name_words_server_and_leading_verb():
    assert leading_verb("createPullRequest") == "create"
    assert name_document(TOOL) == "create Pull Request github create"


def test_the_description_document_holds_parameters_their_descriptions_and_enum_values():
    words = set(tokenize(description_document(TOOL)))
    assert {"pull", "request", "base", "branch", "merge", "squash", "rebase", "login"} <= words


def test_the_dense_document_reads_as_prose():
    text = dense_document(TOOL)
    assert text.startswith("create Pull Request (github). Open a pull request")
    assert "Parameters: base branch (Branch to merge into); merge method; reviewers." in text
