#pragma once
// Names of the objects stsresize creates. Kubernetes limits names (and label values) to 63
// characters for most kinds; long inputs are cut and suffixed with a hash of the whole input,
// so distinct inputs stay distinct and the same input always gives the same name (which is
// what makes "create if missing" idempotent across restarts).
#include <string>
#include <string_view>

namespace stsresize::naming {

// A DNS-1123 label of at most `max` characters: lowercase [a-z0-9-], starting and ending with
// [a-z0-9]. Namespaces are such labels (63 at most), as are the names bounded() makes.
bool is_dns1123_label(std::string_view name, std::size_t max = 63);

// A DNS-1123 label of at most `max` characters made from `base`: `base` itself when it is one;
// otherwise base[0..max-9] + "-" + 8 hex chars of FNV-1a 64 over `base`.
std::string bounded(std::string_view base, std::size_t max = 63);

// PVC name the StatefulSet controller uses for ordinal i: "<template>-<sts>-<i>".
std::string claim_name(std::string_view template_name, std::string_view sts, int ordinal);

// The backup PVC of a source claim: bounded(<claim>-stsresize-bak).
std::string backup_claim(std::string_view source_claim);
// Copy Jobs: bounded(<claim>-stsresize-backup) and bounded(<claim>-stsresize-restore).
std::string backup_job(std::string_view source_claim);
std::string restore_job(std::string_view source_claim);
// The Job that measures what a claim holds before a shrink: bounded(<claim>-stsresize-measure).
std::string measure_job(std::string_view claim);
// The Job that copies a claim while its replica runs (Phase::PreCopying):
// bounded(<claim>-stsresize-precopy).
std::string pre_copy_job(std::string_view source_claim);

// The pod that re-seeds a recovered replica's new claims (kRecoveryPodTemplateAnnotation):
// bounded(<sts>-<ordinal>-stsresize-reseed).
std::string reseed_pod(std::string_view sts, int ordinal);

// The ConfigMap that keeps a StatefulSet's definition while an explicit request re-creates it:
// bounded(stsresize-<sts>-definition).
std::string definition_config_map(std::string_view sts);

// A label value (at most 63 characters of [A-Za-z0-9-_.], alphanumeric at both ends, or empty):
// `value` unchanged if it is one, else bounded(value). Use it both when labelling and when
// selecting, so a 253-character StatefulSet name still finds its Jobs.
std::string label_value(std::string_view value);

// Short stable hex digest (FNV-1a 64) used for suffixes and operation ids.
std::string short_hash(std::string_view input, std::size_t hex_chars = 8);

}  // namespace stsresize::naming
