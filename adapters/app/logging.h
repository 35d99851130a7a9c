#pragma once
// Structured logs for `stsresize run`, on stderr through spdlog: one line per record, either
// text for people ("2026-11-23T09:12:01.123Z info reconciled statefulset=db/web result=idle")
// or JSON for log pipelines ({"ts":"...","level":"info","msg":"reconciled","statefulset":...}).
// Timestamps are UTC. Thread-safe.
#include <expected>
#include <initializer_list>
#include <string>
#include <string_view>

namespace stsresize::logging {

enum class Level { Debug, Info, Warn, Error };
enum class Format { Text, Json };

std::expected<Level, std::string> parse_level(std::string_view text);    // debug|info|warn|error
std::expected<Format, std::string> parse_format(std::string_view text);  // text|json

// Replaces the process-wide logger. Before it is called, records go to stderr as text at info.
void configure(Level level, Format format);

struct Field {
  std::string_view key;
  std::string value;
};

void log(Level level, std::string_view message, std::initializer_list<Field> fields = {});
inline void debug(std::string_view m, std::initializer_list<Field> f = {}) {
  log(Level::Debug, m, f);
}
inline void info(std::string_view m, std::initializer_list<Field> f = {}) {
  log(Level::Info, m, f);
}
inline void warn(std::string_view m, std::initializer_list<Field> f = {}) {
  log(Level::Warn, m, f);
}
inline void error(std::string_view m, std::initializer_list<Field> f = {}) {
  log(Level::Error, m, f);
}

// The line a record becomes, without timestamp and level (exposed for tests).
std::string render(Format format, std::string_view message, std::initializer_list<Field> fields);

}  // namespace stsresize::logging
