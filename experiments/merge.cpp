// SPDX-License-Identifier: MIT
// merge: what N workers found, as one campaign directory (libFuzzer's -merge=1, AFL's afl-cmin):
// nnfuzz::merge_campaigns() on sync directories and/or campaign directories. The corpora are
// reduced to the elements that add coverage (their saved coverage vectors through a
// KdTreeCoverage of --radius, in a deterministic order), the findings deduplicated by input and
// grouped by bug; the output is a campaign directory that resume() reads. See docs/scaling.md.
//
//   merge out/sync --out out/merged --radius 0.707
//   merge out/run1 out/run2 --out out/merged --radius 0.707 --samples-per-bug 20
// Exit status: 0; 1 when an input cannot be read or the output cannot be written (named).
#include <nnfuzz/campaign/merge.hpp>

#include <iostream>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "common/flags.hpp"

int main(int argc, char** argv) {
  CLI::App app{"merge: the corpora and findings of several campaign or sync directories, as one campaign directory"};
  std::vector<std::string> inputs;
  std::string out;
  nnfuzz::MergeOptions o;
  o.radius = nnfuzz::radius_from_squared(0.5f);
  std::size_t samples = o.bugs.samples_per_bug;
  app.add_option("inputs", inputs, "sync directories (--sync of the workers) or campaign directories")->required();
  ex::flag::out(app, out, "the merged campaign directory: new or empty")->required();
  ex::flag::radius(app, o.radius, "the campaign's: the corpora are reduced with it");
  ex::flag::samples_per_bug(app, samples, "in the merged directory");
  app.add_flag("!--no-queues", o.read_queues, "read only corpus.bin, not the workers' queue files");
  CLI11_PARSE(app, argc, argv);
  o.bugs.samples_per_bug = samples;
  try {
    const nnfuzz::MergeSummary s = nnfuzz::merge_campaigns(inputs, out, o);
    std::cout << "merge: " << s.campaigns.size() << " campaign(s), " << s.executions << " executions; corpus "
              << s.elements_kept << " of " << s.elements_read
              << " elements add coverage; findings: " << s.finding_files_written << " file(s) written of "
              << s.finding_files_read << " read (" << s.duplicate_inputs << " with an input already read), "
              << s.findings_reported << " reported\n";
    std::cout << "bugs: " << s.bugs.size() << " signature(s)\n";
    for (const nnfuzz::Bug& b : s.bugs)
      std::cout << "  " << b.count << " x " << b.signature << "  (" << b.files.size() << " file(s))\n";
    std::cout << "written: " << out << " (resume it: corpus.bin, findings/, bugs.bin)\n";
    ex::check_stdout();
  } catch (const std::exception& e) {
    std::cerr << "merge: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
