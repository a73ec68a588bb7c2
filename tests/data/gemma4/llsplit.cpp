// llsplit: llama.cpp's pre-tokenizer split (unicode_regex_split, exported by
// libllama) of each test string; one line per string, pieces as hex, space-separated.
// usage: llsplit IN.inp OUT REGEX...   (byte_encode false)
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
std::vector<std::string> unicode_regex_split(const std::string &, const std::vector<std::string> &, bool);
int main(int argc, char **argv) {
    if (argc < 4) return 2;
    FILE *f = fopen(argv[1], "rb"); fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
    std::string buf(n, '\0'); if (fread(&buf[0], 1, n, f) != (size_t)n) return 1; fclose(f);
    std::vector<std::string> re(argv + 3, argv + argc);
    FILE *o = fopen(argv[2], "wb");
    const std::string sep = "\n__ggml_vocab_test__\n";
    size_t p = 0;
    for (;;) {
        size_t s = buf.find(sep, p); if (s == std::string::npos) break;
        // an empty text has no pieces (llama.cpp's tokenizer never splits
        // one; its custom splitters answer nothing and the std::regex
        // fallback cannot compile their trigger patterns)
        std::vector<std::string> words;
        if (s > p) words = unicode_regex_split(buf.substr(p, s - p), re, false);
        bool first = true;
        for (auto &w : words) { if (!first) fputc(' ', o); first = false; for (unsigned char c : w) fprintf(o, "%02x", c); }
        fputc('\n', o);
        p = s + sep.size();
    }
    fclose(o);
}
