#pragma once
// Namespaces as people type them (-n/--namespace, the NS of NS/NAME, --leader-elect-namespace),
// checked before anything is sent: a namespace becomes a segment of the request's URL path, so
// ".." or "a/b" would address another resource (the API server answered 500 and the commands
// said "try again"), and "UPPER" names a namespace that cannot exist.
#include <expected>
#include <string>
#include <string_view>

namespace stsresize::cli {

// A namespace name is a DNS-1123 label (naming::is_dns1123_label). The error quotes `value`
// and says what a namespace name looks like; the caller names the flag or argument.
std::expected<void, std::string> check_namespace(std::string_view value);

// A StatefulSet's name, as given in NS/NAME or NAME, is a DNS-1123 subdomain (at most 253
// lowercase letters, digits, '-' and '.'): like a namespace, a segment of the request's path.
std::expected<void, std::string> check_statefulset_name(std::string_view value);

}  // namespace stsresize::cli
