// SPDX-License-Identifier: MIT
// nnfuzz: the command-line tool. Fuzz an exported network (ONNX through OpenCV DNN, TorchScript
// through LibTorch) for NaNs, for differences from another version, or for a changed class,
// without writing C++; replay, summarise and show the campaign directory it writes.
//
//   nnfuzz fuzz MODEL --seeds PATH --objective nan|disagree|distance[:T]|label [--against MODEL2] --out DIR
//   nnfuzz replay DIR|FILE    nnfuzz minimize DIR|FILE    nnfuzz whatsup DIR    nnfuzz show DIR
//   nnfuzz merge OUT DIR...    nnfuzz convert IN OUT --weights f16|int8
//   nnfuzz prepare IN OUT [--input-shape C,H,W]
//
// Exit status: 0 nothing found, 1 found, 2 a usage or input error (the message names the file,
// the option and the value). See docs/cli.md. Each subcommand is in its own file (commands.hpp).
#include "commands.hpp"

#include <iostream>

int main(int argc, char** argv) {
  using namespace nnfuzz_cli;
  CLI::App app{
      "nnfuzz: coverage-guided fuzzing of an exported neural network (ONNX via OpenCV DNN, TorchScript "
      "via LibTorch).\nExit status: 0 nothing found, 1 found, 2 usage or input error. See docs/cli.md."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "nnfuzz " + std::to_string(NNFUZZ_VERSION_MAJOR) + "." +
                                        std::to_string(NNFUZZ_VERSION_MINOR) + "." +
                                        std::to_string(NNFUZZ_VERSION_PATCH));
  Command run;
  add_fuzz_command(app, run);
  add_replay_command(app, run);
  add_minimize_command(app, run);
  add_whatsup_command(app, run);
  add_show_command(app, run);
  add_merge_command(app, run);
  add_convert_command(app, run);
  add_prepare_command(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kError;
  }
  if (!run) return kError;
  try {
    return run();
  } catch (const std::exception& e) {
    std::cerr << "nnfuzz: " << e.what() << "\n";
    return kError;
  }
}
