// SPDX-License-Identifier: MIT
// nnfuzz: campaigns beyond one process — workers that share a sync directory (libFuzzer's
// -jobs/-reload, AFL++'s -M/-S), so that any job runner (a Kubernetes Indexed Job, a Slurm
// array, scripts/launch_local.sh) scales a campaign. See docs/scaling.md.
// The directory's layout and files: campaign/sync_files.hpp; the campaign's findings:
// campaign/sync_findings.hpp; stats.json and plot.csv: campaign/sync_stats.hpp.
#pragma once

#include "../rng.hpp"
#include "saver.hpp"
#include "sync_files.hpp"
#include "sync_findings.hpp"
#include "sync_stats.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace nnfuzz {

/// Options of SyncDirectory (plain fields with defaults).
struct SyncOptions {
  /// Sync (export the elements found since the last sync, import the other workers' new ones,
  /// rewrite stats.json) at most every this many seconds of wall time (0: not by the clock).
  double interval_seconds = 5.0;
  /// ... or every this many executions (0: not by executions). Syncing by executions alone is
  /// deterministic given the order in which the workers write (the tests use it).
  std::uint64_t interval_executions = 0;
  /// Checkpoint corpus.bin at a sync at most every this many seconds (0: at every sync), and at
  /// the end of the run. A kill loses no element: those found after the checkpoint are in the
  /// queue files, and a restarted worker takes them back.
  double checkpoint_seconds = 10.0;
  std::uint64_t run_seed = 0;  ///< recorded in each finding file (pass FuzzOptions::seed)
  /// A peer's file that does not load (torn, corrupted, another model's): throw (true) out of
  /// run(), or skip it, record the error (errors()) and go on (false).
  bool strict = false;
  /// A gap in a peer's queue — file <seq> missing while a later one exists (a writer never
  /// leaves one: a file lost on the shared storage, or one a slow file system shows late) — is
  /// waited on for this many seconds (finite, >= 0), then reported (errors(), counters().gaps)
  /// and skipped, or, with `strict`, thrown out of run().
  double gap_seconds = 60.0;
  std::ostream* log = nullptr;  ///< if set: one line per sync that imported something or met an error
  /// Which findings this worker saves as files (per bug, in its own directory); the others are
  /// counted in SYNC/<id>/bugs.bin and stats.json (campaign/bugs.hpp).
  BugOptions bugs;
};

/// Callback that makes a run one worker of a campaign shared through a directory:
///
///     nnfuzz::SyncDirectory sync("/shared/campaign", "3", options);   // SYNC dir, worker id
///     nnfuzz::StopOnSignal stop;
///     auto r = sync.resumable() ? fuzzer.resume(nnfuzz::load_corpus(sync.worker_dir()), sync, stop)
///                               : fuzzer.run(seeds, sync, stop);
///
/// At every sync (SyncOptions: every few seconds and/or executions) it writes the corpus elements
/// this worker found since the last sync as one queue file, checkpoints its corpus (at most every
/// checkpoint_seconds), reads the queue files the other workers wrote since its last look — one
/// watermark per worker, so the cost of a sync grows with the new files, never with the files
/// already read — and offers their elements to the fuzzer (a stage: FuzzContext::admit()), which keeps those
/// whose coverage vectors are new to *its* coverage. The vectors are not recomputed: every worker
/// of a campaign must run the same model (the shapes are checked; the weights cannot be).
/// Findings are written to SYNC/<id>/findings/ the moment they are reported (as CampaignSaver
/// does), unless an earlier finding of the campaign had the same input (finding_signature(),
/// as of the last sync). stats.json and plot.csv are written at every sync and at the end.
///
/// It is the worker's CampaignSaver: do not pass one for the same directory (the lock refuses it).
/// A worker that joins late reads everything once; a worker that dies loses nothing the others
/// read, and its files stay for those that join later; a restarted worker resumes from its own
/// directory (resume(load_corpus(worker_dir()))) and takes back the elements it had queued after
/// its last checkpoint.
class SyncDirectory {
 public:
  /// Creates SYNC/<worker_id>/ (and SYNC), locks it, removes dead writers' temporary files,
  /// reads the watermarks of a previous session and the signatures of the campaign's findings.
  SyncDirectory(std::string sync_dir, std::string worker_id, SyncOptions options = SyncOptions())
      : sync_(std::move(sync_dir)), id_(std::move(worker_id)), o_(options) {
    namespace fs = std::filesystem;
    const char* fn = "SyncDirectory()";
    if (sync_.empty()) detail::fail(fn, ": the sync directory is empty");
    if (!is_worker_id(id_))
      detail::fail(fn, ": worker id '", id_, "' must be 1..64 characters of [A-Za-z0-9._-], not starting with '.'");
    if (!detail::is_finite(o_.interval_seconds) || o_.interval_seconds < 0 ||
        !detail::is_finite(o_.checkpoint_seconds) || o_.checkpoint_seconds < 0)
      detail::fail(fn, ": options 'interval_seconds' and 'checkpoint_seconds' must be finite and >= 0, got ",
                   o_.interval_seconds, " and ", o_.checkpoint_seconds);
    if (!detail::is_finite(o_.gap_seconds) || o_.gap_seconds < 0)
      detail::fail(fn, ": option 'gap_seconds' must be finite and >= 0, got ", o_.gap_seconds);
    if (!(o_.interval_seconds > 0) && o_.interval_executions == 0)
      detail::fail(fn, ": no sync interval: set 'interval_seconds' or 'interval_executions'");
    dir_ = (fs::path(sync_) / id_).string();
    queue_ = (fs::path(dir_) / "queue").string();
    std::error_code ec;
    fs::create_directories(queue_, ec);
    if (ec) detail::fail(fn, ": cannot create directory '", queue_, "': ", ec.message());
    lock_ = detail::lock_campaign(fn, dir_);
    for (const char* sub : {"", "queue", "findings"}) detail::remove_stale_temporaries((fs::path(dir_) / sub).string());
    number_own_queue(fn);
    watermarks_ = detail::read_watermarks(fn, dir_);
    const auto self = watermarks_.find(id_);
    restore_from_ = self == watermarks_.end() ? 0 : self->second;
    restore_pending_ = restore_from_ < counters_.queue_files;
    refresh_findings();  // the campaign's findings so far (this worker's earlier ones too)
    own_earlier_findings_ = findings_.files_of(id_);
    bugs_ = BugLog(o_.bugs);
    bugs_.open(dir_);
    start_unix_ = detail::unix_now();
    if (fs::exists(fs::path(dir_) / "corpus.bin")) resumable_ = true;
  }

  // One owner of the worker's queue numbering: movable, not copyable.
  SyncDirectory(const SyncDirectory&) = delete;
  SyncDirectory& operator=(const SyncDirectory&) = delete;
  SyncDirectory(SyncDirectory&&) = default;
  SyncDirectory& operator=(SyncDirectory&&) = default;

  /// Records where the session starts.
  void on_start(const FuzzStats& st) {
    start_executions_ = st.executions;
    start_ = Clock::now();
  }
  /// The first call (after the seeds, or the resumed corpus) marks what was there as exported;
  /// the final one (st.finished) syncs a last time and checkpoints.
  void on_corpus(const Corpus& c, const FuzzStats& st) {
    if (export_from_ < 0) export_from_ = c.size();
    if (st.finished) sync_now(c, nullptr, st, /*final=*/true);
  }
  /// The stage (stages.hpp): after each batch, syncs when an interval has passed and offers the
  /// other workers' new elements to the fuzzer (ctx.admit()).
  template <typename Context>
  void perform(Context& ctx) {
    if (!incoming_.same_shape(ctx.corpus())) incoming_.reset_like(ctx.corpus());
    on_import(ctx.corpus(), incoming_, ctx.stats());
    if (incoming_.size() == 0) return;
    ctx.admit(incoming_);
    incoming_.reset_like(ctx.corpus());  // empty for the next sync
  }
  /// Syncs when an interval has passed: appends the other workers' new elements to `incoming`
  /// (shaped like `c`). perform() calls it; a test may call it directly.
  void on_import(const Corpus& c, Corpus& incoming, const FuzzStats& st) {
    const bool due = counters_.syncs == 0 ||
                     (o_.interval_executions > 0 && st.executions - last_sync_executions_ >= o_.interval_executions) ||
                     (o_.interval_seconds > 0 && st.seconds - last_sync_seconds_ >= o_.interval_seconds);
    if (due) sync_now(c, &incoming, st, false);
  }
  /// Counts the finding under its bug, and writes it (before anyone else hears of it) unless the
  /// campaign already has its input or its bug has its files (SyncOptions::bugs).
  void on_finding(const Finding& f, const FuzzStats& st) {
    if (first_finding_seconds_ < 0) first_finding_seconds_ = st.seconds;
    const bool new_input = findings_.insert(finding_signature(f));
    if (!bugs_.count(f, new_input)) {
      ++(new_input ? counters_.repeat_findings : counters_.duplicate_findings);
      return;
    }
    paths_.push_back(save_finding(dir_, f, o_.run_seed));
    bugs_.saved(f, paths_.back());
    ++counters_.findings;
  }
  /// Final stats.json.
  void on_end(const FuzzStats& st) { write_stats(st, true); }

  /// True when this worker's directory holds a checkpoint to resume from (load_corpus(worker_dir())).
  bool resumable() const { return resumable_; }
  /// SYNC/<id>.
  const std::string& worker_dir() const { return dir_; }
  /// The sync directory.
  const std::string& sync_dir() const { return sync_; }
  /// The worker id.
  const std::string& worker_id() const { return id_; }
  /// What it did so far.
  const SyncCounters& counters() const { return counters_; }
  /// Errors met reading other workers' files (strict = false), each naming the file and the
  /// reason (an unreadable directory is reported once, until it changes), and gaps met (in its
  /// own queue at a restart, in peers' queues after gap_seconds).
  const std::vector<std::string>& errors() const { return errors_; }
  /// The bugs of this worker's directory (every session's) and their counts.
  const BugLog& bugs() const { return bugs_; }
  /// Paths of the findings written by this worker in this session.
  const std::vector<std::string>& finding_paths() const { return paths_; }
  /// The next queue file expected from each worker seen (its watermark), itself excluded.
  std::map<std::string, std::uint64_t> watermarks() const {
    std::map<std::string, std::uint64_t> out;
    for (const auto& [name, p] : peers_) out[name] = p.next;
    return out;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double thread_cpu_seconds() {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }
  Corpus incoming_;  // perform(): the elements of one sync, shaped like the corpus
  struct Peer {
    std::uint64_t next = 0;    // the next queue file to read
    std::string dir_error;     // the last error on its queue/ (reported once)
    detail::DirListing queue;  // of its queue/, listed for a gap
    std::uint64_t gap_to = 0;  // a later file present while `next` is missing (0: none seen)
    Clock::time_point gap_since{};
  };

  // The number of the highest file of its own queue plus one: a restarted worker never writes
  // over a file of its own (peers past it would never read the new contents). A gap is reported.
  void number_own_queue(const char* fn) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const std::set<std::uint64_t> present = detail::queue_numbers(queue_, ec);
    if (ec) detail::fail(fn, ": cannot list '", queue_, "': ", ec.message());
    counters_.queue_files = present.empty() ? 0 : *present.rbegin() + 1;
    std::uint64_t expect = 0;
    for (std::uint64_t seq : present) {
      if (seq != expect) {
        ++counters_.gaps;
        note(detail::message("SyncDirectory: own queue file '", (fs::path(queue_) / sync_queue_name(expect)).string(),
                             "' is missing (", seq - expect, " file(s) before '", sync_queue_name(seq),
                             "'); numbering goes on after the highest, ", sync_queue_name(counters_.queue_files)));
      }
      expect = seq + 1;
    }
  }
  // Records an error (errors(), the log); counted by the caller.
  void note(std::string e) {
    if (o_.log) *o_.log << e << "\n";
    errors_.push_back(std::move(e));
  }
  // A peer's directory-level error (its queue/ or findings/ cannot be examined): reported once
  // while it stays the same, counted as a bad file, thrown with `strict`.
  void peer_error(Peer& p, const std::string& e) {
    if (o_.strict) detail::fail(e);
    if (p.dir_error == e) return;
    p.dir_error = e;
    ++counters_.bad_files;
    note(e);
  }

  void sync_now(const Corpus& c, Corpus* incoming, const FuzzStats& st, bool final) {
    const auto t0 = Clock::now();
    export_new(c, st);
    if (final || o_.checkpoint_seconds <= 0 || counters_.checkpoints == 0 ||
        st.seconds - last_checkpoint_seconds_ >= o_.checkpoint_seconds) {
      // Before this sync's imports: the watermarks written name what corpus.bin holds.
      save_corpus(dir_, c);
      write_watermarks();
      bugs_.save(dir_);
      last_checkpoint_seconds_ = st.seconds;
      ++counters_.checkpoints;
      resumable_ = true;
    }
    std::uint64_t read = 0, offered = 0, bad = counters_.bad_files;
    const auto t1 = Clock::now();
    const double c1 = thread_cpu_seconds();
    if (incoming) {
      const std::uint64_t f0 = counters_.files_read, o0 = counters_.offered;
      import_all(*incoming);
      read = counters_.files_read - f0;
      offered = counters_.offered - o0;
    }
    refresh_findings();
    counters_.import_seconds += std::chrono::duration<double>(Clock::now() - t1).count();
    counters_.import_cpu_seconds += thread_cpu_seconds() - c1;
    last_sync_executions_ = st.executions;
    last_sync_seconds_ = st.seconds;
    ++counters_.syncs;
    counters_.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    write_stats(st, final);
    if (o_.log && (read > 0 || counters_.bad_files > bad))
      *o_.log << "sync " << id_ << ": read " << read << " file(s), " << offered << " element(s) offered; "
              << st.imported << " new so far; " << counters_.bad_files << " bad file(s)\n";
  }

  // One queue file of the elements this worker found (parent >= 0) since the last export.
  void export_new(const Corpus& c, const FuzzStats& st) {
    if (export_from_ < 0) export_from_ = c.size();
    Corpus chunk;
    chunk.reset_like(c);
    for (Index i = export_from_; i < c.size(); ++i) {
      const CorpusEntry& e = c.entry(i);
      if (e.parent < 0) continue;  // seeds and imports: not this worker's finds
      const Index root = chunk.size();
      chunk.add_from(c, i, -1, root, 0, e.execution);
    }
    export_from_ = c.size();
    if (chunk.empty()) return;
    chunk.set_executions(st.executions);
    save_corpus(queue_, chunk, sync_queue_name(counters_.queue_files));
    ++counters_.queue_files;
    counters_.exported += static_cast<std::uint64_t>(chunk.size());
  }

  // Reads queue files [from, to) of worker `name` into `incoming`; missing files in that range
  // are skipped (its own, after a restart). to = 0: while they exist, a gap waited on for
  // gap_seconds. Returns the next file to read.
  std::uint64_t read_queue(const std::string& name, std::uint64_t from, std::uint64_t to, Corpus& incoming,
                           Peer* peer = nullptr) {
    namespace fs = std::filesystem;
    const std::string q = (fs::path(sync_) / name / "queue").string();
    if (peer) {  // the directory first: EACCES on it is not "nothing written yet"
      std::error_code ec;
      const fs::file_status st = fs::status(q, ec);
      if (st.type() == fs::file_type::not_found) return from;
      if (ec || !fs::is_directory(st)) {
        peer_error(*peer, detail::message("SyncDirectory: cannot read worker '", name, "''s queue '", q,
                                          "': ", ec ? ec.message() : std::string("not a directory")));
        return from;
      }
    }
    std::uint64_t seq = from;
    for (; to == 0 || seq < to; ++seq) {
      const std::string file = sync_queue_name(seq);
      const std::string path = (fs::path(q) / file).string();
      std::error_code ec;
      const fs::file_status st = fs::symlink_status(path, ec);
      if (st.type() == fs::file_type::not_found) {
        if (to != 0) continue;                          // its own, lost: skipped
        if (!peer || !gap_after(*peer, q, seq)) break;  // the next one is not written yet
        ++counters_.gaps;
        const std::string e =
            detail::message("SyncDirectory: a gap in worker '", name, "''s queue: file '", path, "' is missing while '",
                            sync_queue_name(peer->gap_to), "' exists (waited ", o_.gap_seconds, " s); skipped to it");
        if (o_.strict) detail::fail(e);
        note(e);
        seq = peer->gap_to - 1;
        peer->gap_to = 0;
        continue;
      }
      if (peer) peer->gap_to = 0;
      if (ec && (ec.value() == EACCES || ec.value() == EPERM)) {  // the directory's search permission
        if (peer)
          peer_error(*peer, detail::message("SyncDirectory: cannot read worker '", name, "''s queue '", q,
                                            "': ", ec.message()));
        break;
      }
      try {
        if (ec) detail::fail("SyncDirectory: cannot read queue file '", path, "': ", ec.message());
        const Corpus chunk = load_corpus(q, file);
        if (!chunk.same_shape(incoming))
          detail::fail("SyncDirectory: file '", path, "' holds inputs of ", detail::shape_of(chunk),
                       ", this worker's corpus ", detail::shape_of(incoming),
                       ": every worker of a campaign must fuzz the same model");
        detail::append_elements(chunk, incoming);
        counters_.offered += static_cast<std::uint64_t>(chunk.size());
        ++counters_.files_read;
        if (peer) peer->dir_error.clear();
      } catch (const std::invalid_argument& e) {
        if (o_.strict) throw;
        note(e.what());
        ++counters_.bad_files;
      }
    }
    return seq;
  }

  // Whether file `seq` of a peer's queue `q` is a gap waited on long enough: a later file exists
  // (the directory is listed only when it changed since the last look) and gap_seconds passed
  // since the gap was first seen. Sets peer.gap_to to the first later file.
  bool gap_after(Peer& p, const std::string& q, std::uint64_t seq) {
    namespace fs = std::filesystem;
    const auto now = Clock::now();
    if (p.gap_to <= seq) {
      p.gap_to = 0;
      std::error_code ec;
      const auto t = fs::last_write_time(q, ec);
      if (ec) return false;
      if (!p.queue.due(t, now)) return false;
      const std::set<std::uint64_t> present = detail::queue_numbers(q, ec);
      const auto later = present.upper_bound(seq);
      if (later == present.end()) return false;
      p.gap_to = *later;
      p.gap_since = now;
    }
    return std::chrono::duration<double>(now - p.gap_since).count() >= o_.gap_seconds;
  }

  void import_all(Corpus& incoming) {
    if (restore_pending_) {  // own elements queued after the last checkpoint (a kill, a restart)
      const std::uint64_t before = counters_.offered;
      read_queue(id_, restore_from_, counters_.queue_files, incoming);
      counters_.restored += counters_.offered - before;
      counters_.offered = before;
      restore_pending_ = false;
    }
    for (const std::string& name : sync_workers(sync_)) {
      if (name == id_) continue;
      auto it = peers_.find(name);
      if (it == peers_.end()) {
        it = peers_.emplace(name, Peer{}).first;
        const auto w = watermarks_.find(name);
        if (w != watermarks_.end()) it->second.next = w->second;
      }
      it->second.next = read_queue(name, it->second.next, 0, incoming, &it->second);
    }
  }

  // Signatures of the findings written by any worker since the last look.
  void refresh_findings() {
    findings_.refresh(sync_, id_, o_.strict, [this](std::string e) {
      note(std::move(e));
      ++counters_.bad_files;
    });
  }

  void write_watermarks() const {
    std::map<std::string, std::uint64_t> w = watermarks_;  // workers not seen yet this session keep theirs
    for (const auto& [name, p] : peers_) w[name] = p.next;
    w[id_] = restore_pending_ ? restore_from_ : counters_.queue_files;
    detail::write_watermarks(dir_, w);
  }
  void write_stats(const FuzzStats& st, bool finished) const {
    const detail::SyncStatsInput in{dir_,
                                    id_,
                                    counters_,
                                    bugs_,
                                    errors_,
                                    start_unix_,
                                    std::chrono::duration<double>(Clock::now() - start_).count(),
                                    st.executions - start_executions_,
                                    own_earlier_findings_ + counters_.findings,
                                    first_finding_seconds_};
    detail::write_sync_stats(in, st, finished);
  }

  std::string sync_, id_, dir_, queue_;
  SyncOptions o_;
  std::shared_ptr<int> lock_;
  SyncCounters counters_;
  std::vector<std::string> errors_, paths_;
  std::map<std::string, std::uint64_t> watermarks_;  // as read from sync.bin
  std::map<std::string, Peer> peers_;                // queue watermarks of the other workers
  detail::CampaignFindings findings_;                // the campaign's findings' signatures
  BugLog bugs_;                                      // this worker's bugs (bugs.bin)
  std::uint64_t restore_from_ = 0;
  std::size_t own_earlier_findings_ = 0;
  bool restore_pending_ = false, resumable_ = false;
  Index export_from_ = -1;
  std::uint64_t start_executions_ = 0, last_sync_executions_ = 0;
  double last_sync_seconds_ = 0, last_checkpoint_seconds_ = 0, start_unix_ = 0, first_finding_seconds_ = -1;
  Clock::time_point start_ = Clock::now();
};

}  // namespace nnfuzz
