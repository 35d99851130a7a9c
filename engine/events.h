#pragma once
// Kept only so the files that include it need no edit while the journal's vocabulary is
// renamed (issue #14): the entries and their codec are in engine/journal_entries.h, the fold
// in engine/fold.h. New code includes those.
#include "engine/fold.h"
#include "engine/journal_entries.h"
