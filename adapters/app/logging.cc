#include "adapters/app/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>

#include "engine/json.h"

namespace stsresize::logging {

namespace {

std::atomic<Format> g_format{Format::Text};

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::Debug:
      return spdlog::level::debug;
    case Level::Info:
      return spdlog::level::info;
    case Level::Warn:
      return spdlog::level::warn;
    case Level::Error:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

// Values that would split a text line into ambiguous fields are quoted, JSON-style.
std::string text_value(const std::string& value) {
  const bool plain = !value.empty() && value.find_first_of(" \"=\t\n\r\\") == std::string::npos;
  return plain ? value : Json(value).dump();
}

}  // namespace

std::expected<Level, std::string> parse_level(std::string_view text) {
  if (text == "debug") return Level::Debug;
  if (text == "info") return Level::Info;
  if (text == "warn" || text == "warning") return Level::Warn;
  if (text == "error") return Level::Error;
  return std::unexpected("log level \"" + std::string{text} +
                         "\" is not one of debug, info, warn, error");
}

std::expected<Format, std::string> parse_format(std::string_view text) {
  if (text == "text") return Format::Text;
  if (text == "json") return Format::Json;
  return std::unexpected("log format \"" + std::string{text} + "\" is not one of text, json");
}

std::string render(Format format, std::string_view message, std::initializer_list<Field> fields) {
  if (format == Format::Json) {
    // ordered_json keeps msg first and the fields in the order the caller gave them.
    nlohmann::ordered_json line;
    line["msg"] = message;
    for (const Field& field : fields) line[std::string{field.key}] = field.value;
    return line.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  std::string line{message};
  for (const Field& field : fields) {
    line += ' ';
    line += field.key;
    line += '=';
    line += text_value(field.value);
  }
  return line;
}

void configure(Level level, Format format) {
  g_format = format;
  auto logger = std::make_shared<spdlog::logger>("stsresize",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == Format::Json) {
    // The payload is a JSON object from render(): splice timestamp and level in front.
    logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%v)", spdlog::pattern_time_type::utc));
  } else {
    logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        "%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc));
  }
  logger->set_level(to_spdlog(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

void log(Level level, std::string_view message, std::initializer_list<Field> fields) {
  const Format format = g_format.load();
  std::string line = render(format, message, fields);
  if (format == Format::Json) line.erase(0, 1);  // the pattern supplies the opening brace
  spdlog::log(to_spdlog(level), "{}", line);
}

}  // namespace stsresize::logging
