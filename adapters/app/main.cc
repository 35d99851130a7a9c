// Placeholder entry point; the CLI (replay, run, status, advance) is assembled here.
int main() { return 0; }
