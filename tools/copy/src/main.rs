fn main() {
    std::process::exit(rsbloom_copy::main_with(
        std::env::args_os(),
        &mut std::io::stdout(),
    ));
}
