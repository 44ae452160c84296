fn main() {
    println!("stub");
}
