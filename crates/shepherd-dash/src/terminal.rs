//! The terminal while the dashboard runs: raw mode, the alternate screen, a hidden cursor —
//! and the guarantee that all three are undone however the dashboard ends: on `q` or Ctrl-C,
//! on an error, on a signal, and on a panic (a panic hook restores the terminal before the
//! panic message is printed, so the message is readable and the shell usable). Handing the
//! terminal to a pager or editor undoes them for as long as that program runs.

use std::io::{self, BufWriter, Stdout, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

/// Whether the dashboard holds the terminal now (what the panic hook restores).
static HELD: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// Room for a whole frame, so each frame reaches the terminal in one write.
const FRAME_BYTES: usize = 1 << 16;

/// The terminal, held for the dashboard until dropped.
pub(crate) struct Screen {
    pub(crate) terminal: Terminal<CrosstermBackend<BufWriter<Stdout>>>,
}

impl Screen {
    /// Takes the terminal.
    pub(crate) fn take() -> io::Result<Self> {
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        hold()?;
        let terminal = Terminal::new(backend());
        match terminal {
            Ok(terminal) => Ok(Self { terminal }),
            Err(err) => {
                restore();
                Err(err)
            }
        }
    }

    /// Gives the terminal to `program` (a pager, an editor) until it ends, then takes it back.
    pub(crate) fn lend<R>(&mut self, program: impl FnOnce() -> R) -> io::Result<R> {
        restore();
        let result = program();
        hold()?;
        self.renew()?;
        Ok(result)
    }

    /// Starts over on a blank screen of the terminal's current size, so the next frame is drawn
    /// whole (after a resize, or after another program used the terminal). Unlike ratatui's own
    /// clear, this never asks the terminal where its cursor is: an answer that comes late would
    /// be read as typing.
    pub(crate) fn renew(&mut self) -> io::Result<()> {
        execute!(io::stdout(), Clear(ClearType::All))?;
        self.terminal = Terminal::new(backend())?;
        Ok(())
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

fn backend() -> CrosstermBackend<BufWriter<Stdout>> {
    CrosstermBackend::new(BufWriter::with_capacity(FRAME_BYTES, io::stdout()))
}

fn hold() -> io::Result<()> {
    enable_raw_mode()?;
    HELD.store(true, Ordering::SeqCst);
    execute!(io::stdout(), EnterAlternateScreen, Hide)
}

/// Gives the terminal back as it was: cooked mode, the main screen, a visible cursor. Safe to
/// call more than once and from the panic hook.
pub(crate) fn restore() {
    if HELD.swap(false, Ordering::SeqCst) {
        let mut out = io::stdout();
        let _shown = execute!(out, Show, LeaveAlternateScreen);
        let _cooked = disable_raw_mode();
        let _flushed = out.flush();
    }
}
