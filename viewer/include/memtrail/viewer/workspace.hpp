#pragma once
// Everything in the window: a menu bar with an open dialog and a path box, the loads in flight
// with their progress (and each one's memory curves once its models are built), and one tab per
// open snapshot, each holding a view. Several snapshots
// open together are the ranks of one job to the Ranks view, which can pick the selected tab.
// Rank summaries and folders (of summaries or snapshots) open as one more tab, the Ranks view
// of many ranks (rank_summaries_view), every set opened merged into it.
// A tab can also follow a running process (File > Attach, workspace_live.cpp): its view is
// remade from each new document the process's live_session makes, the user's choices kept.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "memtrail/viewer/live_session.hpp"
#include "memtrail/viewer/load_job.hpp"
#include "memtrail/viewer/rank_summaries_view.hpp"
#include "memtrail/viewer/view.hpp"

namespace memtrail::viewer {

class attach_dialog;
class file_dialog;
class save_dialog;

class workspace {
  public:
    workspace();
    ~workspace();

    // Starts loading `path` in the background; it gets a tab when loaded. A rank summary or a
    // folder goes to open_rank_summaries.
    void open(const std::string& path);
    // Opens each path: the snapshots one by one, the summaries and folders as one set of ranks.
    void open(const std::vector<std::string>& paths);
    // Reads (or makes, from snapshots) the rank summaries of `paths` in the background; they join
    // the ranks tab when done, and the files that gave none are listed as errors.
    void open_rank_summaries(std::vector<std::string> paths);
    // Makes the ranks tab the selected one on the next frame; false when there is none.
    bool show_rank_summaries();
    const rank_summaries_view* rank_summaries() const { return summaries_.get(); }
    // Which frames the stacks of files opened from now on show (View > Every frame).
    void set_frames(analysis::frame_visibility frames) { frames_ = frames; }
    // Opens every tab's file again with `frames`, in tab order (the View menu's toggle).
    void reopen_with(analysis::frame_visibility frames);
    // Adds a tab for a document already loaded; returns its view.
    view& add(std::shared_ptr<const document> doc);

    // Attaches to process `pid` in the background; its tab appears with the first state received
    // and follows the process until it exits or the tab is detached or closed.
    void attach(pid_t pid, live_session::options how = {});
    // The session a tab's view follows; nullptr for a file's view.
    const live_session* session_of(const view& v) const;
    // What the document a following tab shows was made from (File > Save received writes it);
    // nullptr for a file's view.
    std::shared_ptr<const snapshot::snapshot> received_by(const view& v) const;
    // Any session still attaching or attached.
    bool following() const;
    // Whether every session has a tab showing its latest document, or has ended without one.
    bool attachments_shown() const;

    // Draws the workspace over the whole display.
    void draw();

    bool loading() const { return !loads_.empty() || !summary_loads_.empty(); }
    // Loads started from now on wait after their first picture until release_loads() (for a
    // screenshot of that moment).
    void hold_loads_at_preview() { hold_ = load_hold::at_preview; }
    // Every load has its first picture, or has ended.
    bool previews_ready() const;
    void release_loads();
    // Loads running or views computing in the background.
    bool busy() const;
    bool quit_requested() const { return quit_requested_; }
    // Messages of loads that failed, oldest first.
    const std::vector<std::string>& errors() const { return errors_; }

    std::vector<view*> views();
    // Makes `v`'s tab the selected one on the next frame.
    void select(const view& v);
    // The view of the tab drawn last frame (the selected one); nullptr before any.
    const view* active() const { return active_; }

  private:
    struct tab {
        std::unique_ptr<view> content;
        int id = 0;
    };
    void draw_menu();
    // [SECTION] following running processes (workspace_live.cpp)
    struct attachment {
        std::unique_ptr<live_session> session;
        int tab_id = 0;      // 0 until the first document has a tab
        uint64_t shown = 0;  // the number of the document its tab shows
        std::shared_ptr<const snapshot::snapshot> recording;  // what that document was made from
    };
    void follow_attachments();  // new documents into their tabs, closed tabs detached
    void draw_live_menu_items();
    void draw_live_dialogs();
    void draw_attaching();              // the sessions still waiting for their first state
    void draw_live_status(int tab_id);  // above a following tab's view
    attachment* attachment_of_tab(int tab_id);
    void collect_finished_loads();
    void collect_finished_summaries();
    // The ranks tab's content, and the snapshot a click there asked for.
    void draw_rank_summaries();
    // Makes the tab of `doc` the selected one (a rank picked in a Ranks view).
    void activate(const std::shared_ptr<const document>& doc);

    std::vector<tab> tabs_;
    std::vector<std::unique_ptr<load_job>> loads_;
    std::vector<std::unique_ptr<rank_summaries_job>> summary_loads_;
    std::unique_ptr<rank_summaries_view> summaries_;
    bool select_summaries_ = false;
    std::vector<std::string> errors_;
    std::unique_ptr<file_dialog> dialog_;
    std::vector<attachment> attachments_;
    std::unique_ptr<attach_dialog> attach_dialog_;
    std::unique_ptr<save_dialog> save_dialog_;
    int save_tab_ = 0;  // the tab whose received recording the save dialog writes
    const view* select_ = nullptr;
    const view* active_ = nullptr;
    int next_id_ = 1;
    char path_box_[1024] = {};
    bool quit_requested_ = false;
    analysis::frame_visibility frames_ = analysis::frame_visibility::user_frames;
    load_hold hold_ = load_hold::none;
};

}  // namespace memtrail::viewer
