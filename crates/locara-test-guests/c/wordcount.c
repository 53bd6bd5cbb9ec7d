/* A Locara tool written in C: counts the words and lines of a text.
 *
 * The tool ABI (docs/tool-abi.md): one JSON object of arguments on stdin, one JSON value on
 * stdout and exit code 0; or a one-line message on stderr and exit code 2 (bad arguments)
 * or 1 (failed). The input schema (manifest.json) admits exactly {"text": string}, and the
 * host checks it before this runs; the parser below still refuses anything else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad_args(const char *message) {
    fprintf(stderr, "%s\n", message);
    return 2;
}

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* Counts words (runs of non-whitespace) and lines in the JSON string at *pp (just after its opening quote), decoding
 * escapes; leaves *pp after the closing quote. Returns 0 on a malformed string. */
static int count_string(const char **pp, long *words, long *lines) {
    const char *p = *pp;
    int in_word = 0;
    *words = 0;
    *lines = 0;
    unsigned last = '\n';
    for (;;) {
        unsigned c = (unsigned char)*p++;
        if (c == '\0' || c < 0x20) return 0;
        if (c == '"') break;
        if (c == '\\') {
            char e = *p++;
            switch (e) {
            case '"': case '\\': case '/': c = (unsigned char)e; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u':
                if (!hex4(p, &c)) return 0;
                p += 4;
                break;
            default: return 0;
            }
        }
        last = c;
        int space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
        if (c == '\n') (*lines)++;
        if (space) in_word = 0;
        else if (!in_word) { in_word = 1; (*words)++; }
    }
    /* A last line without a newline counts too; a trailing newline starts no new line. */
    if (last != '\n') (*lines)++;
    *pp = p;
    return 1;
}

int main(void) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf) { fprintf(stderr, "out of memory\n"); return 1; }
    size_t n;
    while ((n = fread(buf + len, 1, cap - len, stdin)) > 0) {
        len += n;
        if (len == cap) {
            cap *= 2;
            char *grown = realloc(buf, cap + 1);
            if (!grown) { fprintf(stderr, "out of memory: the text is too large\n"); return 1; }
            buf = grown;
        }
    }
    buf[len] = '\0';
    if (strlen(buf) != len) return bad_args("the arguments contain a NUL byte");

    const char *p = skip_ws(buf);
    if (*p++ != '{') return bad_args("the arguments must be a JSON object {\"text\": \"...\"}");
    p = skip_ws(p);
    if (strncmp(p, "\"text\"", 6) != 0)
        return bad_args("the only argument is \"text\", a string: pass {\"text\": \"...\"}");
    p = skip_ws(p + 6);
    if (*p++ != ':') return bad_args("the arguments are not valid JSON: expected ':' after \"text\"");
    p = skip_ws(p);
    if (*p++ != '"') return bad_args("\"text\" must be a string");
    long words, lines;
    if (!count_string(&p, &words, &lines)) return bad_args("\"text\" is not a valid JSON string");
    p = skip_ws(p);
    if (*p++ != '}') return bad_args("the only argument is \"text\": remove the others");
    if (*skip_ws(p) != '\0') return bad_args("the arguments are not valid JSON: text after the object");

    printf("{\"words\":%ld,\"lines\":%ld}\n", words, lines);
    return 0;
}
