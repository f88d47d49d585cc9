#include "cli/app.hpp"

int main(int argc, char** argv) { return mblast::cli::run(argc, argv); }
