// Removed once the first state lands.
namespace stsresize {}
